/**
 * Retries through the real openai client against the local test server: the jitter is
 * drawn afresh by each session's llm actor (injectable), and the server's retry hints
 * (`x-should-retry`, `retry-after-ms`, `retry-after`) are obeyed.
 */
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { retryDelay } from '../../src/settings/settings.js';
import type { Fault, TestServer } from '../../src/testing/index.js';
import { collect, logEntries, newSession, ofType, testServers } from '../helpers.js';

const served = testServers();
const serveFaults = (faults: Fault[]): Promise<TestServer> => served(() => ({ content: 'answered' }), { faults });

const llmFor = (server: TestServer) =>
  openaiChat({ baseURL: server.baseURL, model: 'workmem-test', contextWindow: 32_000, maxOutputTokens: 1_000, env: {} });

const POLICY = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 10_000 };

async function retryDelays(random?: () => number): Promise<number[]> {
  const server = await serveFaults([
    { type: 'server_error', status: 503 },
    { type: 'server_error' },
    { type: 'rate_limit', retryAfterSeconds: null },
  ]);
  const session = await newSession({ llm: llmFor(server), settings: { retry: POLICY }, ...(random ? { random } : {}) });
  const events = collect(session);
  expect(await session.prompt('answer after three failures')).toMatchObject({ status: 'done', text: 'answered' });
  await session.close();
  return ofType(events, 'retry').map((e) => e.delayMs);
}

describe('retry jitter', () => {
  it('an injected random source gives exactly the expected delays', async () => {
    const draws = [0, 0.5, 0.999];
    let i = 0;
    const delays = await retryDelays(() => draws[i++ % draws.length]!);
    // equal jitter: half the exponential delay fixed, half drawn
    expect(delays).toEqual([50, 150, 400]);
    expect(retryDelay(POLICY, 3, undefined, 0.999)).toBe(400);
  });

  it('two sessions retry the same failures at different instants', async () => {
    const first = await retryDelays();
    const second = await retryDelays();
    expect(first).toHaveLength(3);
    for (const [attempt, delay] of first.entries()) {
      const exponential = POLICY.baseDelayMs * 2 ** attempt;
      expect(delay).toBeGreaterThanOrEqual(exponential / 2);
      expect(delay).toBeLessThanOrEqual(exponential);
    }
    // Three draws over 51, 101 and 201 possible delays: the same three twice is a one-in-a-million chance.
    expect(second).not.toEqual(first);
  });
});

describe("the server's retry hints", () => {
  it('retry-after-ms wins over retry-after', async () => {
    const server = await serveFaults([{ type: 'rate_limit', retryAfterSeconds: 5, headers: { 'retry-after-ms': '35' } }]);
    const session = await newSession({ llm: llmFor(server), settings: { retry: POLICY } });
    const events = collect(session);
    expect(await session.prompt('q')).toMatchObject({ status: 'done' });
    expect(ofType(events, 'retry').map((e) => [e.delayMs, e.error.retryAfterMs])).toEqual([[35, 35]]);
    await session.close();
  });

  it('x-should-retry: true retries a status we would not retry', async () => {
    const server = await serveFaults([{ type: 'server_error', status: 400, headers: { 'x-should-retry': 'true' } }]);
    const session = await newSession({ llm: llmFor(server), settings: { retry: POLICY } });
    const events = collect(session);
    expect(await session.prompt('q')).toMatchObject({ status: 'done', text: 'answered' });
    expect(server.requests).toHaveLength(2);
    expect(ofType(events, 'retry')).toHaveLength(1);
    expect(ofType(events, 'retry')[0]!.error).toMatchObject({ status: 400, retryable: true });
    await session.close();
  });

  it('x-should-retry: false fails a 429 and a 503 at once, saying why', async () => {
    for (const fault of [
      { type: 'rate_limit', retryAfterSeconds: 1, headers: { 'x-should-retry': 'false' } },
      { type: 'server_error', status: 503, headers: { 'x-should-retry': 'false' } },
    ] as Fault[]) {
      const server = await serveFaults([fault]);
      const session = await newSession({ llm: llmFor(server), settings: { retry: POLICY } });
      const events = collect(session);
      const result = await session.prompt('q');
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ retryable: false });
      expect(result.error!.message).toMatch(/x-should-retry: false/);
      expect(server.requests).toHaveLength(1);
      expect(ofType(events, 'retry')).toHaveLength(0);
      // The user message is kept; nothing of the refused request is.
      const roles = logEntries(session.dir).flatMap((e) => (e.type === 'message' ? [e.message.role] : []));
      expect(roles).toEqual(['user']);
      await session.close();
    }
  });
});
