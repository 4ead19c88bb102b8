/**
 * Streams that never end a turn by themselves, through the real openai client against
 * the local test server: keep-alive chunks with no content (the stall watchdog is re-armed
 * only by content), and an endless answer (cut past twice the requested maximum output).
 */
import { describe, expect, it } from 'vitest';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { outputLimitChars } from '../../src/llm/outputLimit.js';
import type { Fault, TestServer } from '../../src/testing/index.js';
import { collect, logEntries, newSession, ofType, testServers } from '../helpers.js';

const served = testServers();
const serve = (faults: Fault[]): Promise<TestServer> => served(() => ({ content: 'A normal answer.' }), { faults });

// No per-token share: the first output's wait is the stall allowance, as for a hosted model.
const llmFor = (server: TestServer, maxOutputTokens = 100, timeoutMs = 300) =>
  openaiChat({
    baseURL: server.baseURL,
    model: 'workmem-test',
    contextWindow: 32_000,
    maxOutputTokens,
    timeoutMs,
    firstByteMsPerPromptToken: 0,
    env: {},
  });

const messages = (dir: string) => logEntries(dir).flatMap((e) => (e.type === 'message' ? [e.message] : []));

describe('streams that would never end a turn', () => {
  for (const as of ['empty', 'delta', 'comment'] as const)
    it(`keep-alives alone (${as === 'empty' ? 'chunks with no choice' : as === 'delta' ? 'empty deltas' : ': ping comments'}) do not hold off the wait for the first output: the request times out, the session goes on`, async () => {
      const server = await serve([{ type: 'keepalive', everyMs: 50, as }]);
      // 2 s: on a loaded machine the response must start before the SDK's own timeout, or the keep-alives are never seen.
      const session = await newSession({ llm: llmFor(server, 100, 2_000), settings: { retry: { maxRetries: 0 } } });
      const first = await session.prompt('hello?');
      expect(first.status).toBe('failed');
      expect(first.error).toMatchObject({ kind: 'timeout', retryable: true });
      expect(first.error!.message).toMatch(/^no output from the server within 2 s/);
      const next = await session.prompt('again');
      expect(next).toMatchObject({ status: 'done', text: 'A normal answer.' });
      expect(messages(session.dir).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
      await session.close();
    });

  it('an endless answer is cut past twice the requested maximum, not retried, and the session stays usable', async () => {
    const server = await serve([{ type: 'endless' }]);
    const session = await newSession({ llm: llmFor(server, 100), settings: { retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 } } });
    const events = collect(session);
    const first = await session.prompt('tell me everything');
    expect(first.status).toBe('failed');
    expect(first.error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect(first.error!.message).toMatch(/more output than requested/);
    expect(ofType(events, 'retry')).toHaveLength(0);
    expect(server.requests).toHaveLength(1);
    // Streamed before the cut: delivered as deltas, bounded, and — like any failed request — not stored.
    const streamed = ofType(events, 'message_delta')
      .map((e) => e.delta)
      .join('');
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.length).toBeLessThanOrEqual(outputLimitChars(100));
    expect(messages(session.dir)).toEqual([{ role: 'user', content: 'tell me everything' }]);

    const next = await session.prompt('just a short answer');
    expect(next).toMatchObject({ status: 'done', text: 'A normal answer.' });
    expect(messages(session.dir).map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    await session.close();
  });

  it("a reasoning model's thinking is content: it holds off the stall watchdog", async () => {
    // 6 s of thinking, longer than a 5 s stall timeout, with a delta every 50 ms: a hundred times the gap, so a
    // loaded machine's late timers (hundreds of ms at load 20) never make a stall of it (it did with 100 ms and 300 ms).
    const server = await serve([{ type: 'thinking', chunks: 120, everyMs: 50 }]);
    const session = await newSession({ llm: llmFor(server, 100, 5_000), settings: { retry: { maxRetries: 0 } } });
    expect(await session.prompt('think first')).toMatchObject({ status: 'done', text: 'A normal answer.' });
    await session.close();
  });

  it('round 3 #4: a stream of finish_reason-only chunks ends at its finish, with the answer', async () => {
    // Finish-only chunks every 50 ms, more often than the 300 ms stall allowance: counted as progress, they never ended.
    const server = await serve([{ type: 'finish_flood', everyMs: 50 }]);
    const session = await newSession({ llm: llmFor(server), settings: { retry: { maxRetries: 0 } } });
    const events = collect(session);
    // The flood never ends: a turn that read on past the finish would never end either (the run's hang guard).
    const result = await session.prompt('hello?');
    expect(result).toMatchObject({ status: 'done', text: 'A normal answer.' });
    expect(ofType(events, 'retry')).toHaveLength(0);
    expect(messages(session.dir).map((m) => m.role)).toEqual(['user', 'assistant']);
    await session.close();
  });

  it('an answer within the limit is untouched', async () => {
    const server = await served(() => ({ content: 'x'.repeat(700) }), { chunkChars: 3 });
    const session = await newSession({ llm: llmFor(server, 100) });
    expect(await session.prompt('q')).toMatchObject({ status: 'done', text: 'x'.repeat(700) });
    await session.close();
  });
});
