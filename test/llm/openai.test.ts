/**
 * The OpenAI client against the local test server, through real HTTP: streaming, tool
 * calls in pieces, usage, every fault of the test server, abort, and bad streams.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/settings/config.js';
import { openaiChat, redact } from '../../src/llm/openaiChat.js';
import { openSession, type Session } from '../../src/session/index.js';
import { defineTool } from '../../src/tools/tool.js';
import { scripted, type Fault, type TestServer } from '../../src/testing/index.js';
import { collect, logEntries, newSession, ofType, splitTail, tempHome, testServers } from '../helpers.js';

const FAST_RETRY = { retry: { maxRetries: 3, baseDelayMs: 5, maxDelayMs: 40 } };
const serve = testServers();

function llmFor(server: TestServer, options: Parameters<typeof openaiChat>[0] = {}) {
  return openaiChat({ baseURL: server.baseURL, model: 'workmem-test', contextWindow: 32_000, maxOutputTokens: 1_000, env: {}, ...options });
}

const echo = defineTool({
  name: 'echo',
  description: 'Echo text',
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

/** Every tool call in the log has exactly one result, in order: the history is valid. */
function expectValidHistory(session: Session): void {
  const messages = logEntries(session.dir).flatMap((e) => (e.type === 'message' ? [e.message] : []));
  const pending: string[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') {
      expect(pending).toEqual([]);
      pending.push(...(m.tool_calls ?? []).map((c) => c.id));
    } else if (m.role === 'tool') {
      expect(m.tool_call_id).toBe(pending.shift());
    } else {
      expect(pending).toEqual([]);
    }
  }
}

describe('openaiChat over HTTP', () => {
  it('streams text: many deltas, one message, the request framed as the spec says', async () => {
    const text = 'Streaming works: this answer arrives in many small pieces over SSE.';
    const server = await serve(scripted([text]), { chunkChars: 4 });
    const session = await newSession({ llm: llmFor(server) });
    const events = collect(session);
    const result = await session.prompt('Stream something.');
    expect(result).toMatchObject({ status: 'done', text });
    const deltas = ofType(events, 'message_delta').map((e) => e.delta);
    expect(deltas.length).toBe(Math.ceil(text.length / 4));
    expect(deltas.join('')).toBe(text);
    const body = server.requests[0]!.body;
    expect(body).toMatchObject({ model: 'workmem-test', stream: true, stream_options: { include_usage: true }, max_tokens: 1_000 });
    expect(body.tools!.map((t) => t.function.name)).toEqual(['read', 'write', 'edit', 'compact_history']);
    expect(body.messages[0]!.role).toBe('system');
    await session.close();
  });

  it('reassembles tool calls split over many chunks, and two tool calls in one response', async () => {
    const args1 = JSON.stringify({ text: 'first — with unicode ✓ and "quotes"' });
    const args2 = JSON.stringify({ text: 'second' });
    const server = await serve(
      scripted([
        { toolCalls: [{ id: 'call_a', name: 'echo', arguments: args1 }] },
        {
          content: 'Both next.',
          toolCalls: [
            { id: 'call_b', name: 'echo', arguments: args2 },
            { id: 'call_c', name: 'echo', arguments: args1 },
          ],
        },
        'All done.',
      ]),
      { chunkChars: 2 },
    );
    const session = await newSession({ llm: llmFor(server), tools: [echo] });
    const events = collect(session);
    expect((await session.prompt('Call the tools.')).text).toBe('All done.');
    const assistants = logEntries(session.dir).flatMap((e) => (e.type === 'message' && e.message.role === 'assistant' ? [e.message] : []));
    expect(assistants[0]!.tool_calls).toEqual([{ id: 'call_a', type: 'function', function: { name: 'echo', arguments: args1 } }]);
    expect(assistants[1]!.content).toBe('Both next.');
    expect(assistants[1]!.tool_calls!.map((c) => [c.id, c.function.arguments])).toEqual([
      ['call_b', args2],
      ['call_c', args1],
    ]);
    expect(ofType(events, 'tool_end').map((e) => e.content)).toEqual([
      'echo: first — with unicode ✓ and "quotes"',
      'echo: second',
      'echo: first — with unicode ✓ and "quotes"',
    ]);
    expectValidHistory(session);
    await session.close();
  });

  it('takes usage when the server reports it (calibrating what the model is told), and counts when it does not', async () => {
    const scaled = await serve(() => ({ content: 'ok' }), { promptTokenScale: 1.25 });
    const session = await newSession({ llm: llmFor(scaled) });
    const events = collect(session);
    await session.prompt('first');
    await session.prompt('second');
    const [first, second] = ofType(events, 'prompt_built');
    expect(first!.tokens.calibration).toBe(0);
    // The server counted 25 % more for the first prompt; the second request is calibrated by the difference.
    expect(second!.tokens.calibration).toBe(Math.round(scaled.requests[0]!.promptTokens * 1.25) - first!.tokens.counted);
    expect(second!.tokens.calibration).toBeGreaterThan(100);
    const meta = splitTail(scaled.requests[1]!.body.messages.at(-1)!.content!).meta;
    expect(meta.tokens_used).toBe(second!.tokens.counted + second!.tokens.calibration);
    await session.close();

    const silent = await serve(() => ({ content: 'ok' }), { reportUsage: false });
    const counted = await newSession({ llm: llmFor(silent) });
    const countedEvents = collect(counted);
    await counted.prompt('first');
    await counted.prompt('second');
    expect(ofType(countedEvents, 'prompt_built').map((b) => b.tokens.calibration)).toEqual([0, 0]);
    // Our count is the server's own count when it does not report: both use o200k.
    expect(ofType(countedEvents, 'prompt_built')[1]!.tokens.counted).toBe(silent.requests[1]!.promptTokens);
    await counted.close();
  });
});

describe('faults', () => {
  const recoverable: [string, Fault][] = [
    ['429 with retry-after', { type: 'rate_limit', retryAfterSeconds: 1 }],
    ['500', { type: 'server_error' }],
    ['503', { type: 'server_error', status: 503 }],
    ['connection reset mid-stream', { type: 'reset', afterChunks: 3 }],
    ['connection reset before any chunk', { type: 'reset', afterChunks: 0 }],
    ['stream ending without finish_reason or [DONE]', { type: 'truncate', afterChunks: 4 }],
    ['non-JSON SSE event', { type: 'garbage', afterChunks: 2 }],
    ['an empty response', { type: 'empty' }],
    ['a silent server (idle timeout)', { type: 'stall', afterChunks: 2, ms: 400 }],
  ];
  for (const [name, fault] of recoverable) {
    it(`recovers from ${name} by retrying, and keeps the session consistent`, async () => {
      const server = await serve(() => ({ content: 'The full answer after the fault.' }), { faults: [fault], chunkChars: 5 });
      const session = await newSession({ llm: llmFor(server, { timeoutMs: 200 }), settings: FAST_RETRY });
      const events = collect(session);
      const result = await session.prompt('Answer despite the fault.');
      expect(result).toMatchObject({ status: 'done', text: 'The full answer after the fault.' });
      expect(server.requests).toHaveLength(2);
      const retries = ofType(events, 'retry');
      expect(retries).toHaveLength(1);
      if (fault.type === 'rate_limit')
        expect(retries[0]).toMatchObject({ delayMs: 40, error: { kind: 'rate_limit', status: 429, retryAfterMs: 1000 } });
      // Only the answer that completed is stored: nothing from the failed attempt.
      const assistants = logEntries(session.dir).flatMap((e) => (e.type === 'message' && e.message.role === 'assistant' ? [e] : []));
      expect(assistants.map((e) => (e.type === 'message' ? e.message.content : ''))).toEqual(['The full answer after the fault.']);
      await session.close();
    });
  }

  it('latency only slows the answer down', async () => {
    const server = await serve(() => ({ content: 'late' }), { faults: [{ type: 'latency', ms: 150 }] });
    const session = await newSession({ llm: llmFor(server) });
    const started = Date.now();
    expect((await session.prompt('slow?')).text).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    await session.close();
  });

  // A context-length error: compacted once and retried, a second one fails (test/llm/llmClients.test.ts, for both clients).

  it('malformed tool-call JSON becomes a tool error the model can correct', async () => {
    const server = await serve(scripted([{ toolCalls: [{ name: 'echo', arguments: '{"text": "hello"}' }] }, 'Corrected.']), {
      faults: [{ type: 'malformed_tool_json' }],
    });
    const session = await newSession({ llm: llmFor(server), tools: [echo] });
    const events = collect(session);
    expect((await session.prompt('Use echo.')).text).toBe('Corrected.');
    expect(ofType(events, 'tool_end')[0]).toMatchObject({ isError: true, content: expect.stringMatching(/not valid JSON/) });
    expectValidHistory(session);
    await session.close();
  });

  it('a fault that persists ends the turn with a clear error; the session stays consistent and resumable', async () => {
    const home = tempHome();
    const server = await serve(() => ({ content: 'recovered' }), { faults: () => ({ type: 'server_error', status: 502 }) });
    const session = await newSession({ llm: llmFor(server), home, settings: FAST_RETRY });
    const events = collect(session);
    const result = await session.prompt('Will fail.');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'server', status: 502 } });
    expect(server.requests).toHaveLength(4); // the first try and 3 retries
    expect(ofType(events, 'error').at(-1)).toMatchObject({ fatal: true, error: { kind: 'server' } });
    await session.close();
    const healthy = await serve(() => ({ content: 'recovered' }));
    const resumed = await openSession(session.id, { llm: llmFor(healthy), home, env: {} });
    expect(resumed.damage).toEqual([]);
    expect((await resumed.prompt('Again.')).text).toBe('recovered');
    // The failed turn left its user message, and nothing half-written.
    expect(healthy.requests[0]!.body.messages.filter((m) => m.role === 'user').length).toBe(2);
    expectValidHistory(resumed);
    await resumed.close();
  });

  it('a wrong API key is an auth error, not retried, and the key is never shown', async () => {
    const server = await serve(() => ({ content: 'x' }), { apiKey: 'sk-right-key-0123456789' });
    const wrong = llmFor(server, { apiKey: 'sk-wrong-key-9876543210abcdef' });
    const session = await newSession({ llm: wrong, settings: FAST_RETRY });
    const result = await session.prompt('hi');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'auth', status: 401 } });
    expect(server.requests).toHaveLength(0);
    expect(JSON.stringify(result)).not.toContain('9876543210abcdef');
    await session.close();
    expect(redact('Incorrect API key provided: sk-wrong-key-9876543210abcdef.', 'sk-wrong-key-9876543210abcdef')).toBe(
      'Incorrect API key provided: [redacted].',
    );
  });
});

describe('configuration', () => {
  it('honours OPENAI_BASE_URL and OPENAI_API_KEY, and needs a key only for OpenAI itself', async () => {
    const server = await serve(() => ({ content: 'env works' }), { apiKey: 'sk-env-key-1234567890' });
    const llm = openaiChat({
      env: { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'sk-env-key-1234567890', WORKMEM_MODEL: 'qwen2.5:7b' },
    });
    expect(llm).toMatchObject({ model: 'qwen2.5:7b', contextWindow: 32_768, baseURL: server.baseURL });
    const session = await newSession({ llm });
    expect((await session.prompt('hi')).text).toBe('env works');
    await session.close();
    expect(() => openaiChat({ env: {} })).toThrow(ConfigError);
    expect(() => openaiChat({ env: {} })).toThrow(/set OPENAI_API_KEY, or set OPENAI_BASE_URL/);
    expect(() => openaiChat({ env: { OPENAI_BASE_URL: 'not a url' } })).toThrow(/"not a url" is not a URL/);
    expect(openaiChat({ env: { OPENAI_API_KEY: 'sk-x' }, model: 'gpt-4o' })).toMatchObject({
      contextWindow: 128_000,
      maxOutputTokens: 4_096,
    });
  });

  it('an unreachable endpoint is a network error after the retries', async () => {
    const llm = openaiChat({ baseURL: 'http://127.0.0.1:9/v1', model: 'x', env: {} });
    const session = await newSession({ llm, settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } } });
    const result = await session.prompt('anyone there?');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'network' } });
    expect(result.error!.message).toMatch(/connection to the server failed/);
    await session.close();
  });

  it('serves /v1/models and non-streaming completions (used for summaries)', async () => {
    const server = await serve(() => ({ content: 'A summary.' }));
    const models = await (await fetch(`${server.baseURL}/models`)).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'workmem-test', object: 'model' }] });
    const llm = llmFor(server, { compactionModel: 'cheap-model' });
    const reply = await llm.summarize!(
      { messages: [{ role: 'user', content: 'Summarise.' }], tools: [], maxOutputTokens: 100 },
      { signal: new AbortController().signal },
    );
    expect(reply).toMatchObject({ message: { content: 'A summary.' }, finishReason: 'stop' });
    expect(reply.usage!.promptTokens).toBeGreaterThan(0);
    expect(server.requests[0]!.body).toMatchObject({ model: 'cheap-model', stream: false });
  });
});

describe('bad streams', () => {
  it('an unknown finish reason keeps the answer and reports it', async () => {
    const server = await serve(() => ({ content: 'Kept anyway.' }), { faults: [{ type: 'finish_reason', value: 'eos_token' }] });
    const session = await newSession({ llm: llmFor(server) });
    const events = collect(session);
    expect(await session.prompt('hi')).toMatchObject({ status: 'done', text: 'Kept anyway.' });
    expect(ofType(events, 'error')).toEqual([
      expect.objectContaining({
        fatal: false,
        error: expect.objectContaining({ message: expect.stringMatching(/unknown finish reason "eos_token"/) }),
      }),
    ]);
    await session.close();
  });

  it('garbage that never stops fails clearly, with no crash and no unhandled rejection', async () => {
    const server = await serve(() => ({ content: 'never seen' }), {
      faults: () => ({ type: 'garbage', afterChunks: 1, data: '<html>502 Bad Gateway</html>' }),
    });
    const session = await newSession({ llm: llmFor(server), settings: FAST_RETRY });
    const result = await session.prompt('hi');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'bad_response' } });
    expect(result.error!.message).toMatch(/not JSON/);
    expect(logEntries(session.dir).filter((e) => e.type === 'message' && e.message.role === 'assistant')).toEqual([]);
    await session.close();
  });

  it('abort mid-stream reaches the HTTP request and keeps what was streamed', async () => {
    // A stream that outlasts the test (30,000 chunks, 40 ms apart): only an abort that reaches the request ends the turn.
    const server = await serve(() => ({ content: 'word '.repeat(24_000) }), {
      chunkChars: 4,
      chunkDelayMs: 40,
    });
    const session = await newSession({ llm: llmFor(server) });
    const deltas: string[] = [];
    session.on('message_delta', (e) => {
      deltas.push(e.delta);
      if (deltas.length === 2) session.abort();
    });
    const result = await session.prompt('Count.');
    expect(result.status).toBe('aborted');
    const kept = logEntries(session.dir).at(-1)!;
    expect(kept).toMatchObject({ type: 'message', stop: 'aborted', message: { role: 'assistant', content: deltas.join('') } });
    await session.close();
  });
});
