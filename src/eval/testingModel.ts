/**
 * `--model testing:<profile>`: a behaviour profile played by the built-in test server, one
 * server per conversation and arm, so that its prompt cache is theirs alone, as a provider's
 * would be, and nothing one arm did reaches another. The cache follows the provider the
 * prices stand for: a price with `cacheWrite` is a provider with explicit caching
 * (Anthropic's: breakpoints sent as cache_control, writes reported), any other automatic
 * prefix caching (OpenAI's).
 */
import type { LLM } from '../llm/llm.js';
import { openaiChat } from '../llm/openaiChat.js';
import { behaviourProfile, type BehaviourProfile } from '../testing/behaviourProfiles.js';
import { startTestServer, type PromptCaching, type TestServer } from '../testing/testServer.js';
import type { Price } from './prices.js';

/** A profile's model for each run, and the servers to close when the eval ends. */
export interface TestingModels {
  /** A model on a server of its own (the previous one is closed first). */
  next(): Promise<LLM>;
  close(): Promise<void>;
}

/** The caching a price stands for: explicit where writes are priced, else automatic. */
export function cachingFor(price: Price | null | undefined): Exclude<PromptCaching, 'off'> {
  return price?.cacheWrite !== undefined ? 'explicit' : 'automatic';
}

/** Models of `profile` named `model`, each on a fresh test server caching as `caching` says. */
export function testingModels(profile: BehaviourProfile, model: string, caching: Exclude<PromptCaching, 'off'>): TestingModels {
  let server: TestServer | null = null;
  return {
    async next() {
      await server?.close();
      server = await startTestServer({ policy: behaviourProfile(profile), promptCaching: caching });
      return openaiChat({
        baseURL: server.baseURL,
        apiKey: 'testing',
        model,
        contextWindow: 1_000_000,
        env: {},
        ...(caching === 'explicit' ? { cacheControl: true } : {}),
      });
    },
    async close() {
      await server?.close();
      server = null;
    },
  };
}
