/**
 * aiSdkModel: workmem's llm over an AI SDK language model. With the AI SDK's own mock
 * model (streamed parts, usage, errors as providers throw them) and through the local
 * test server with @ai-sdk/openai-compatible; never a hosted API.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { APICallError, type LanguageModelV3CallOptions, type LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { LLMError, type LLMRequest } from '../../src/llm/llm.js';
import { collect, newSession, ofType, testServers } from '../helpers.js';
import { scripted } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/tool.js';
import { z } from 'zod';

const echo = defineTool({
  name: 'echo',
  description: 'Echo text',
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

interface Fixture {
  provider: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  message: string;
  retryAfterMs?: number;
}
const FIXTURES = JSON.parse(readFileSync(new URL('../fixtures/provider-errors.json', import.meta.url), 'utf8')) as Record<
  'overflow' | 'rateLimit' | 'overloaded',
  Fixture[]
> & { streamErrors: { provider: string; event: unknown; kind: string }[] };

/** The APICallError a provider's AI SDK package throws for this response. */
const apiError = (f: Fixture): APICallError =>
  new APICallError({
    message: f.message,
    url: `https://${f.provider}.example/v1`,
    requestBodyValues: {},
    statusCode: f.status,
    responseHeaders: f.headers,
    responseBody: f.body,
  });

const usage = (input: number, output: number, cacheRead?: number) => ({
  inputTokens: { total: input, noCache: cacheRead === undefined ? undefined : input - cacheRead, cacheRead, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const finish = (reason: 'stop' | 'tool-calls', u = usage(10, 5)): LanguageModelV3StreamPart => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason === 'stop' ? 'stop' : 'tool_calls' },
  usage: u,
});
const streamOf = (parts: LanguageModelV3StreamPart[], chunkDelayInMs: number | null = null) => ({
  stream: simulateReadableStream({ chunks: parts, chunkDelayInMs }),
});
const textParts = (text: string, u = usage(10, 5)): LanguageModelV3StreamPart[] => [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't' },
  ...[...text.matchAll(/.{1,4}/gs)].map((m) => ({ type: 'text-delta' as const, id: 't', delta: m[0] })),
  { type: 'text-end', id: 't' },
  finish('stop', u),
];

/** A model whose stream sends `part(i)` every millisecond until it is cancelled. */
const endless = (part: (i: number) => LanguageModelV3StreamPart) => {
  let cancelled = false;
  let i = 0;
  const model = new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        pull: async (c) => {
          await sleep(1);
          c.enqueue(part(i++));
        },
        cancel: () => void (cancelled = true),
      }),
    }),
  });
  return { model, cancelled: () => cancelled };
};

/** `work`, or a failure saying it did not end in `ms`. */
const within = <T>(ms: number, work: Promise<T>): Promise<T> =>
  Promise.race([work, sleep(ms).then(() => Promise.reject(new Error(`did not end within ${ms} ms`)))]);

function folderBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  return total;
}

const REQUEST: LLMRequest = { messages: [{ role: 'user', content: 'hi' }], tools: [], maxOutputTokens: 100 };
const call = (signal = new AbortController().signal, deltas: string[] = []) => ({ signal, onText: (d: string) => void deltas.push(d) });

describe('aiSdkModel over the AI SDK mock model', () => {
  it('streams text deltas, and reports usage with the cached input tokens', async () => {
    const model = new MockLanguageModelV3({ modelId: 'gpt-4o', doStream: streamOf(textParts('Hello there, Ada.', usage(1200, 7, 1024))) });
    const llm = aiSdkModel(model);
    const deltas: string[] = [];
    const response = await llm.complete(REQUEST, call(undefined, deltas));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello there, Ada.');
    expect(response).toEqual({
      message: { role: 'assistant', content: 'Hello there, Ada.' },
      usage: { promptTokens: 1200, completionTokens: 7, cachedPromptTokens: 1024 },
      finishReason: 'stop',
    });
    expect(llm.contextWindow).toBe(128_000);
  });

  it('assembles tool calls from their input deltas, or from a whole tool-call part', async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'tool-input-start', id: 'call_1', toolName: 'echo' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{"text":' },
      { type: 'tool-input-delta', id: 'call_1', delta: '"hi"}' },
      { type: 'tool-input-end', id: 'call_1' },
      { type: 'tool-call', toolCallId: 'call_2', toolName: 'lookup', input: '{"q":"x"}' },
      finish('tool-calls'),
    ];
    const response = await aiSdkModel(new MockLanguageModelV3({ doStream: streamOf(parts) })).complete(REQUEST, call());
    expect(response.finishReason).toBe('tool_calls');
    expect(response.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'echo', arguments: '{"text":"hi"}' } },
      { id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
    ]);
  });

  it('sends the conversation as the AI SDK prompt: tool results named after their calls, tools as JSON schemas', async () => {
    const model = new MockLanguageModelV3({ doStream: streamOf(textParts('ok')) });
    await aiSdkModel(model).complete(
      {
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'use echo' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'echo', arguments: '{"text":"a"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'a' },
        ],
        tools: [{ name: 'echo', description: 'Echo.', parameters: { type: 'object', properties: { text: { type: 'string' } } } }],
        maxOutputTokens: 50,
      },
      call(),
    );
    const sent = model.doStreamCalls[0]! as LanguageModelV3CallOptions;
    expect(sent.maxOutputTokens).toBe(50);
    expect(sent.tools).toEqual([
      { type: 'function', name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    ]);
    expect(sent.prompt).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'use echo' }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: { text: 'a' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'echo', output: { type: 'text', value: 'a' } }] },
    ]);
  });

  it('an abort stops the stream and is reported as aborted', async () => {
    const model = new MockLanguageModelV3({ doStream: streamOf(textParts('a long answer that keeps coming'), 30) });
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = aiSdkModel(model).complete(REQUEST, call(controller.signal, deltas));
    setTimeout(() => controller.abort(), 70);
    await expect(pending).rejects.toMatchObject({ kind: 'aborted' });
    expect(deltas.join('').length).toBeLessThan('a long answer that keeps coming'.length);
  });

  it('an endless answer (text or tool input) is cut past twice the requested maximum and not retried', async () => {
    for (const delta of ['text-delta', 'tool-input-delta'] as const) {
      let cancelled = false;
      const endless = new MockLanguageModelV3({
        doStream: async () => ({
          stream: new ReadableStream<LanguageModelV3StreamPart>({
            start: (c) =>
              c.enqueue(
                delta === 'tool-input-delta' ? { type: 'tool-input-start', id: 'c1', toolName: 'echo' } : { type: 'text-start', id: 't' },
              ),
            pull: (c) =>
              c.enqueue(
                delta === 'text-delta'
                  ? { type: 'text-delta', id: 't', delta: 'word '.repeat(20) }
                  : { type: 'tool-input-delta', id: 'c1', delta: '"aaaa",'.repeat(15) },
              ),
            cancel: () => void (cancelled = true),
          }),
        }),
      });
      const deltas: string[] = [];
      const error = await aiSdkModel(endless)
        .complete(REQUEST, call(undefined, deltas))
        .catch((e: unknown) => e);
      expect(error, delta).toBeInstanceOf(LLMError);
      expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
      expect((error as Error).message).toMatch(/more output than requested \(over 4,096 characters for at most 100 tokens\)/);
      expect(deltas.join('').length).toBeLessThanOrEqual(4_096);
      expect(cancelled, `${delta}: the stream is cancelled`).toBe(true);
    }
  });

  it('round 3 #4: a stream of finish parts ends at its first finish, with the answer, and is not read on', async () => {
    let pulled = 0;
    const parts = textParts('The answer.');
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          pull: async (c) => {
            await sleep(1);
            c.enqueue(parts[Math.min(pulled++, parts.length - 1)]!);
          },
        }),
      }),
    });
    const response = await within(3_000, aiSdkModel(model, { timeoutMs: 200 }).complete(REQUEST, call()));
    expect(response).toMatchObject({ message: { content: 'The answer.' }, finishReason: 'stop' });
    // The finish was the last part read (a stream may pull one ahead).
    expect(pulled).toBeLessThanOrEqual(parts.length + 1);
  });

  it('round 3 #5: endless parts that add nothing (repeated tool-input-start, provider-executed tool calls) do not hold off the stall timeout', async () => {
    const floods: [string, (i: number) => LanguageModelV3StreamPart][] = [
      ['tool-input-start', () => ({ type: 'tool-input-start', id: 'c1', toolName: 'echo' })],
      [
        'provider-executed tool-call',
        (i) => ({ type: 'tool-call', toolCallId: `s${i}`, toolName: 'web_search', input: '{}', providerExecuted: true }),
      ],
      ['response-metadata', () => ({ type: 'response-metadata', id: 'r' })],
    ];
    for (const [name, part] of floods) {
      const flood = endless(part);
      // A limit far off: only the stall timeout can end these.
      const error = await within(
        3_000,
        aiSdkModel(flood.model, { timeoutMs: 200, firstByteTimeoutMs: 200, firstByteMsPerPromptToken: 0 })
          .complete({ ...REQUEST, maxOutputTokens: 1_000_000 }, call())
          .catch((e: unknown) => e),
      );
      expect(error, name).toMatchObject({ kind: 'timeout' });
      expect(flood.cancelled(), `${name}: the stream is cancelled`).toBe(true);
    }
  });

  it('round 3 #5: every part counts towards the output limit: a flood of new tool calls is cut', async () => {
    const flood = endless((i) => ({ type: 'tool-input-start', id: `c${i}`, toolName: 'echo' }));
    const error = await within(
      5_000,
      aiSdkModel(flood.model, { timeoutMs: 60_000 })
        .complete(REQUEST, call())
        .catch((e: unknown) => e),
    );
    expect(error).toMatchObject({ kind: 'bad_response', retryable: false });
    expect((error as Error).message).toMatch(/more output than requested/);
    expect(flood.cancelled()).toBe(true);
  });

  it('a stream that stalls times out; one that ends without a finish is a cut connection', async () => {
    const stalled = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({ start: (c) => c.enqueue({ type: 'text-delta', id: 't', delta: 'a' }) }),
      }),
    });
    await expect(aiSdkModel(stalled, { timeoutMs: 50 }).complete(REQUEST, call())).rejects.toMatchObject({ kind: 'timeout' });
    const cut = new MockLanguageModelV3({ doStream: streamOf(textParts('abc').slice(0, -1)) });
    await expect(aiSdkModel(cut).complete(REQUEST, call())).rejects.toMatchObject({ kind: 'network', retryable: true });
  });

  for (const f of FIXTURES.overflow)
    it(`${f.provider}'s context-overflow error is an overflow`, async () => {
      const model = new MockLanguageModelV3({ doStream: async () => Promise.reject(apiError(f)) });
      const error = (await aiSdkModel(model)
        .complete(REQUEST, call())
        .catch((e: unknown) => e)) as LLMError;
      expect(error).toBeInstanceOf(LLMError);
      expect(error).toMatchObject({ kind: 'overflow', status: f.status, message: f.message });
    });

  for (const f of FIXTURES.rateLimit)
    it(`${f.provider}'s rate limit is a rate_limit${f.retryAfterMs ? ' with its retry-after' : ''}`, async () => {
      const model = new MockLanguageModelV3({ doStream: async () => Promise.reject(apiError(f)) });
      const error = (await aiSdkModel(model)
        .complete(REQUEST, call())
        .catch((e: unknown) => e)) as LLMError;
      expect(error).toMatchObject({ kind: 'rate_limit', status: 429, retryable: true, retryAfterMs: f.retryAfterMs });
    });

  for (const f of FIXTURES.overloaded)
    it(`${f.provider}'s overloaded answer (${f.status}) is a retryable server error that says so`, async () => {
      const model = new MockLanguageModelV3({ doStream: async () => Promise.reject(apiError(f)) });
      const error = (await aiSdkModel(model)
        .complete(REQUEST, call())
        .catch((e: unknown) => e)) as LLMError;
      expect(error).toMatchObject({ kind: 'server', status: f.status, retryable: true });
      expect(error.message).toMatch(/overloaded/i);
    });

  for (const f of FIXTURES.streamErrors)
    it(`${f.provider}'s error event inside a stream (${(f.event as { type: string }).type}) is ${f.kind}`, async () => {
      const parts: LanguageModelV3StreamPart[] = [
        { type: 'text-delta', id: 't', delta: 'par' },
        { type: 'error', error: f.event },
      ];
      const error = await aiSdkModel(new MockLanguageModelV3({ doStream: streamOf(parts) }))
        .complete(REQUEST, call())
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: f.kind });
    });

  it('refuses a model id string or a v2 model, saying what it needs', () => {
    expect(() => aiSdkModel('anthropic/claude-sonnet-4.5' as never)).toThrow(/must be a provider's model object/);
    expect(() => aiSdkModel({ specificationVersion: 'v2', doStream: () => {} } as never)).toThrow(/specification v2; workmem needs v3/);
  });

  it('summaries go to the separate compaction model, the same way', async () => {
    const main = new MockLanguageModelV3({ modelId: 'big', doStream: streamOf(textParts('main')) });
    const cheap = new MockLanguageModelV3({ modelId: 'small', doStream: streamOf(textParts('summary')) });
    const llm = aiSdkModel(main, { compactionModel: cheap });
    expect(llm.compactionModel).toBe('small');
    const summary = await llm.summarize!(REQUEST, { signal: new AbortController().signal });
    expect(summary.message.content).toBe('summary');
    expect(main.doStreamCalls).toHaveLength(0);
    expect(cheap.doStreamCalls).toHaveLength(1);
  });
});

describe('a session over aiSdkModel', () => {
  it('round 3 #6: tool names count towards the output limit: 20 calls with 1 MB names write nothing to working-memory/', async () => {
    const name = 'n'.repeat(1024 * 1024);
    const parts: LanguageModelV3StreamPart[] = [
      ...Array.from({ length: 20 }, (_, i): LanguageModelV3StreamPart => ({
        type: 'tool-call',
        toolCallId: `c${i}`,
        toolName: name,
        input: '{}',
      })),
      finish('tool-calls'),
    ];
    const model = new MockLanguageModelV3({ modelId: 'workmem-test', doStream: streamOf(parts) });
    const session = await newSession({ llm: aiSdkModel(model, { contextWindow: 32_000 }), settings: { retry: { maxRetries: 0 } } });
    const result = await session.prompt('call tools');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'bad_response', retryable: false } });
    expect(result.error!.message).toMatch(/more output than requested/);
    expect(folderBytes(join(session.dir, 'working-memory'))).toBeLessThan(64 * 1024);
    expect(statSync(join(session.dir, 'messages.jsonl')).size).toBeLessThan(64 * 1024);
    await session.close();
  });

  it('round 3 #12: a 1 MB error message inside the stream becomes a short error, in the result and in every event', async () => {
    // 1 MB, 200 times the few KB an error may keep: the point is the cap (the reliability matrix keeps a 10 MB one).
    const message = `overloaded: ${'detail '.repeat(150_000)}`;
    const model = new MockLanguageModelV3({
      modelId: 'workmem-test',
      doStream: async () =>
        streamOf([
          { type: 'text-delta', id: 't', delta: 'par' },
          { type: 'error', error: { type: 'overloaded_error', message } },
        ]),
    });
    const session = await newSession({ llm: aiSdkModel(model), settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } } });
    const events = collect(session);
    const result = await session.prompt('hi');
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'server' } });
    expect(result.error!.message.length).toBeLessThan(5_000);
    expect(result.error!.message).toMatch(
      /^the server sent an error in the stream: overloaded: detail detail.*… \[error text cut: 1\.0 MB in all\]$/,
    );
    for (const event of events) expect(JSON.stringify(event).length, event.type).toBeLessThan(10_000);
    expect(ofType(events, 'retry')).toHaveLength(1);
    await session.close();
  });

  for (const f of FIXTURES.overflow)
    it(`compacts once and retries on ${f.provider}'s overflow wording; a second overflow fails clearly`, async () => {
      let overflows = 0;
      const turns: number[] = [];
      // The turn's requests carry tools; the compaction's summary requests carry none.
      const model = new MockLanguageModelV3({
        modelId: 'workmem-test',
        doStream: async (options) => {
          if (options.tools?.length && overflows > 0) {
            overflows--;
            throw apiError(f);
          }
          if (options.tools?.length) turns.push(options.prompt.length);
          return streamOf(textParts(options.tools?.length ? 'fits now' : 'A summary of the earlier turns.'));
        },
      });
      const session = await newSession({ llm: aiSdkModel(model, { contextWindow: 32_000 }), settings: { injectHistory: true } });
      const events = collect(session);
      for (let i = 0; i < 6; i++) await session.prompt(`Earlier turn ${i}: ${'words '.repeat(200)}`);
      overflows = 1;
      const result = await session.prompt('This one overflows on the server.');
      expect(result).toMatchObject({ status: 'done', text: 'fits now' });
      const compactions = ofType(events, 'compaction_end');
      expect(compactions).toEqual([expect.objectContaining({ reason: 'overflow', turn: 7 })]);
      expect(compactions[0]!.replaced).toBeGreaterThan(0);
      // The retried request is shorter than the turn before it carried.
      expect(turns.at(-1)!).toBeLessThan(turns.at(-2)!);
      overflows = 2;
      const again = await session.prompt('Overflow twice.');
      expect(again).toMatchObject({ status: 'failed', error: { kind: 'overflow', message: f.message } });
      await session.close();
    });
});

describe('aiSdkModel through the test server with @ai-sdk/openai-compatible', () => {
  const serve = testServers();
  const providerFor = (baseURL: string) => createOpenAICompatible({ name: 'workmem-test', baseURL, apiKey: 'test', includeUsage: true });

  it('runs a session: streamed text, a tool call and its result, usage from the server', async () => {
    const server = await serve(scripted([{ toolCalls: [{ name: 'echo', arguments: '{"text":"hello"}' }] }, 'Done reading.']));
    const llm = aiSdkModel(providerFor(server.baseURL).chatModel('workmem-test'));
    const session = await newSession({ llm, tools: [echo] });
    const events = collect(session);
    const result = await session.prompt('Use echo.');
    expect(result).toMatchObject({ status: 'done', text: 'Done reading.' });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.body.stream).toBe(true);
    expect(ofType(events, 'tool_end')[0]).toMatchObject({ name: 'echo', isError: false, content: 'echo: hello' });
    // The second request carries the call and its result, paired as the server requires.
    const second = server.requests[1]!.body.messages;
    expect(second.find((m) => m.role === 'tool')?.content).toMatch(/^echo: hello/);
    expect(ofType(events, 'message_delta').length).toBeGreaterThan(1);
    await session.close();
  });

  it("the server's context-length error compacts once and retries", async () => {
    let overflows = 0;
    const server = await serve(() => ({ content: 'fits now' }), {
      faults: (_, request) => (request.tools?.length && overflows > 0 ? (overflows--, { type: 'context_length' }) : null),
    });
    const session = await newSession({
      llm: aiSdkModel(providerFor(server.baseURL).chatModel('workmem-test')),
      settings: { injectHistory: true },
    });
    const events = collect(session);
    for (let i = 0; i < 6; i++) await session.prompt(`Earlier turn ${i}: ${'words '.repeat(200)}`);
    overflows = 1;
    expect(await session.prompt('This one overflows on the server.')).toMatchObject({ status: 'done' });
    expect(ofType(events, 'compaction_end')).toEqual([expect.objectContaining({ reason: 'overflow' })]);
    const turnRequests = server.requests.filter((r) => r.body.tools?.length);
    const [refused, retried] = turnRequests.slice(-2);
    expect(refused!.status).toBe(400);
    expect(retried!.status).toBe(200);
    expect(retried!.promptTokens).toBeLessThan(refused!.promptTokens);
    await session.close();
  });

  it('a rate limit with retry-after is retried after it', async () => {
    const server = await serve(() => ({ content: 'after the wait' }), { faults: [{ type: 'rate_limit', retryAfterSeconds: 0.05 }] });
    const session = await newSession({
      llm: aiSdkModel(providerFor(server.baseURL).chatModel('workmem-test')),
      settings: { retry: { maxRetries: 2, baseDelayMs: 5, maxDelayMs: 1000 } },
    });
    const events = collect(session);
    expect(await session.prompt('hi')).toMatchObject({ status: 'done', text: 'after the wait' });
    expect(ofType(events, 'retry')[0]).toMatchObject({ error: { kind: 'rate_limit', status: 429, retryAfterMs: 50 } });
    await session.close();
  });
});
