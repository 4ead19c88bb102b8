/**
 * The OpenAI Agents SDK (`@openai/agents` on npm) through `workmem serve` with its defaults:
 * an agent on `OpenAIChatCompletionsModel` over the `openai` client pointed at the proxy (the
 * proxy's token as its key), strict tools, structured output, parallel tool calls, streamed
 * and not, its history handed back on every run as its docs show. Eight turns with tool calls
 * stay in one session with its memory; a second conversation never sees the first one's.
 * Installed into a cache of its own as pi's test installs pi (never a dependency): the SDK,
 * its `openai` and `zod` are imported from there.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { installedOnce } from '../installedOnce.js';
import { calledTools, conversationTurns, expectApart, OTHER_TURNS, servedAgents } from './agentRuns.js';

const VERSION = '0.20.0';
const ENTRY = join('node_modules', '@openai', 'agents', 'dist', 'index.mjs');
// The SDK's own kind: loaded from its cache at run time, typed as the test uses it.
type Sdk = Record<string, any>;
let sdk: Sdk;
let OpenAI: new (options: Record<string, unknown>) => unknown;
let z: Sdk;
const served = servedAgents();

beforeAll(async () => {
  const dir = installedOnce(`workmem-test-openai-agents-${VERSION}`, [`@openai/agents@${VERSION}`, 'openai@6', 'zod@4'], ENTRY);
  const load = (path: string): Promise<Sdk> => import(pathToFileURL(join(dir, path)).href) as Promise<Sdk>;
  sdk = await load(ENTRY);
  OpenAI = (await load(join('node_modules', 'openai', 'index.mjs'))).default;
  z = (await load(join('node_modules', 'zod', 'index.js'))).z;
  sdk.setTracingDisabled(true);
});

describe('the OpenAI Agents SDK through workmem serve, its defaults', () => {
  it('runs 8 turns with strict, parallel tool calls and structured output, streamed and not, in one session; another conversation sees none of it', async () => {
    const { proxy, home } = await served();
    const client = new OpenAI({ baseURL: proxy.url, apiKey: proxy.token, maxRetries: 0 });
    const model = new sdk.OpenAIChatCompletionsModel(client, 'workmem-test');
    const ran: string[] = [];
    const weather = sdk.tool({
      name: 'weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      strict: true,
      execute: async ({ city }: { city: string }) => (ran.push(`weather ${city}`), `Sunny in ${city}.`),
    });
    const lookup = sdk.tool({
      name: 'lookup',
      description: 'Look a word up',
      parameters: z.object({ word: z.string() }),
      strict: true,
      execute: async ({ word }: { word: string }) => (ran.push(`lookup ${word}`), `${word}: a flower.`),
    });
    const agent = new sdk.Agent({
      name: 'Gardener',
      instructions: 'You help with a garden. Answer briefly.',
      model,
      tools: [weather, lookup],
      outputType: z.object({ answer: z.string() }),
      modelSettings: { parallelToolCalls: true },
    });
    const conversation = () => {
      let history: unknown[] = [];
      return async (text: string, stream: boolean): Promise<string> => {
        const input = [...history, sdk.user(text)];
        const result = stream ? await sdk.run(agent, input, { stream: true }) : await sdk.run(agent, input);
        if (stream) {
          for await (const _ of result) void _;
          await result.completed;
        }
        history = result.history;
        return (result.finalOutput as { answer: string }).answer;
      };
    };
    const a = conversation();
    const turns = conversationTurns([
      'Use the weather tool with {"city":"Paris"}. Use the lookup tool with {"word":"rose"}.',
      'Use the weather tool with {"city":"Oslo"}.',
      'Use the lookup tool with {"word":"tulip"}. Use the weather tool with {"city":"Rome"}.',
    ]);
    const answers: string[] = [];
    for (const [i, text] of turns.entries()) answers.push(await a(text, i % 2 === 1));
    expect(answers[6]).toContain('rose1');
    expect(answers[7]).toContain('rose3');
    expect(ran).toEqual(['weather Paris', 'lookup rose', 'weather Oslo', 'lookup tulip', 'weather Rome']);
    const b = conversation();
    await b(OTHER_TURNS[0], false);
    expect(await b(OTHER_TURNS[1], true)).not.toContain('rose1');
    const first = await expectApart(home, expect);
    expect(calledTools(first.log)).toEqual(expect.arrayContaining(['weather', 'lookup', 'write']));
    // The parallel calls of one answer kept together.
    const parallel = first.log.find(
      (e) => e.type === 'message' && e.message.role === 'assistant' && (e.message.tool_calls ?? []).length === 2,
    );
    expect(parallel).toBeDefined();
  });
});
