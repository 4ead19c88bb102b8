/**
 * An eval run is repeatable: what an arm sends does not depend on how its model's answers
 * arrive. A streamed answer raises an event per chunk, and a loaded machine receives the
 * chunks otherwise grouped; the sessions' clock (which names archives the model is shown)
 * must not move with them.
 */
import { describe, expect, it } from 'vitest';
import { builtInSuite, runEval, type Suite } from '../../src/eval/index.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import type { LLM } from '../../src/llm/llm.js';
import { behaviourProfile, startTestServer, type TestServer } from '../../src/testing/index.js';

const suite: Suite = { name: 'one', conversations: builtInSuite('small').conversations.slice(0, 1) };

/** The bodies of every request the arm sent; `split`: the model's text reaches workmem a character at a time. */
async function sent(split: boolean): Promise<string[]> {
  const servers: TestServer[] = [];
  try {
    await runEval({
      llm: async () => {
        const server = await startTestServer({ policy: behaviourProfile('eager'), promptCaching: 'automatic' });
        servers.push(server);
        const llm = openaiChat({ baseURL: server.baseURL, apiKey: 't', model: 'testing:eager', contextWindow: 1_000_000, env: {} });
        if (!split) return llm;
        const chunked: LLM = {
          ...llm,
          complete: (request, options) =>
            llm.complete(request, { ...options, onText: (text) => [...text].forEach((c) => options.onText?.(c)) }),
        };
        return chunked;
      },
      model: 'testing:eager',
      suite,
      arms: ['workmem-auto'],
    });
    return servers.flatMap((s) => s.requests.map((r) => JSON.stringify(r.body.messages)));
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
}

describe('the eval clock', () => {
  it('sends the same requests however the answers are chunked', async () => {
    const [whole, split] = [await sent(false), await sent(true)];
    // Not vacuous: archives were made, and their names were shown to the model.
    expect(whole.some((body) => /detail\/compact-2026-01-05T/.test(body))).toBe(true);
    expect(split).toEqual(whole);
  });
});
