/**
 * Anthropic's Messages API through `workmem serve`: the AI SDK's Anthropic provider as an
 * agent of its own tool (its loop sends its whole conversation each step), streamed and not,
 * to the test server speaking the Messages API with explicit prompt caching. The client's
 * calls round-trip; workmem's never reach it; the memory is written; requests carry
 * workmem's cache breakpoints (at most four) and the usage is the sum of the upstream's
 * reads, writes and the rest; with thinking on, a tool loop's thinking goes upstream again
 * before its calls (the test server refuses it otherwise); failures keep Anthropic's shape.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { readMessagesRequest } from '../../src/serve/messagesWire.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { proxies, runClientTool, sessionState } from './proxyHarness.js';
import { assembledMessage, post } from './sseEvents.js';

const proxied = proxies();
const LOOKUP = {
  name: 'lookup',
  description: 'Look a word up',
  input_schema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
};

/** The cache_control marks in a request body, wherever they are. */
const marks = (body: unknown): number => JSON.stringify(body).split('"cache_control"').length - 1;

describe("Anthropic's Messages API through workmem serve", () => {
  it('reads blocks as the session holds them: results before the text after them, thinking beside its calls, marks dropped', () => {
    const request = readMessagesRequest(
      {
        model: 'm',
        max_tokens: 100,
        system: [
          { type: 'text', text: 'You help.' },
          { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
        messages: [
          { role: 'user', content: 'Look up cat.' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hm', signature: 'sig' },
              { type: 'text', text: 'Looking.' },
              { type: 'tool_use', id: 't1', name: 'lookup', input: { input: 'cat' } },
            ],
          },
          { role: 'system', content: 'Today is Monday.' },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [{ type: 'text', text: 'cat: a word' }],
                cache_control: { type: 'ephemeral' },
              },
              { type: 'text', text: 'Thanks.' },
            ],
          },
        ],
        tools: [{ ...LOOKUP, cache_control: { type: 'ephemeral' } }],
      },
      { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'x-api-key': 'k' },
    );
    expect(request.instructions).toBe('You help.\n\nBe brief.\n\nToday is Monday.');
    expect(Array.from({ length: request.conversation.length }, (_, i) => request.conversation.at(i))).toEqual([
      { role: 'user', content: 'Look up cat.' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'lookup', arguments: '{"input":"cat"}' } }],
      },
      { role: 'tool', tool_call_id: 't1', content: 'cat: a word' },
      { role: 'user', content: 'Thanks.' },
    ]);
    expect(request.thinking.of(['t1'])).toEqual([{ type: 'thinking', thinking: 'hm', signature: 'sig' }]);
    expect(request.cacheTtl).toBe('1h');
    expect(request.wireTools.get('lookup')).toEqual(LOOKUP);
    expect(request.headers).toEqual({ 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    expect(request.user).toBeNull();

    const refused = (body: Record<string, unknown>) => {
      try {
        readMessagesRequest({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...body });
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused({ max_tokens: undefined })).toMatch(/max_tokens is required/);
    expect(refused({ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] })).toMatch(/"image" block/);
    expect(refused({ messages: [{ role: 'assistant', content: [{ type: 'server_tool_use', id: 's', name: 'web_search' }] }] })).toMatch(
      /"server_tool_use" block/,
    );
  });

  for (const stream of [false, true])
    it(`runs the AI SDK's Anthropic provider with a tool of its own; cached at workmem's breakpoints (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { contextWindow: 16_000 }, server: { promptCaching: 'explicit' } });
      const anthropic = createAnthropic({
        baseURL: proxy.url,
        apiKey: proxy.token,
        headers: { 'x-workmem-session': `messages-${stream}` },
      });
      const ran: string[] = [];
      const tools = {
        lookup: tool({
          description: LOOKUP.description,
          inputSchema: jsonSchema<{ input: string }>(LOOKUP.input_schema as never),
          execute: async ({ input }) => {
            ran.push(input);
            return runClientTool('lookup', JSON.stringify({ input }));
          },
        }),
      };
      const prompts = [
        'My plant1 is rose1.',
        'My plant2 is rose2.',
        'Use the lookup tool with word1.',
        'What is my plant1?',
        'What is my plant2?',
      ];
      const messages: ModelMessage[] = [];
      const answers: string[] = [];
      for (const text of prompts) {
        messages.push({ role: 'user', content: text });
        const before = server.requests.length;
        const call = {
          model: anthropic('workmem-test'),
          system: 'You help with a garden.',
          messages,
          tools,
          stopWhen: stepCountIs(5),
          maxOutputTokens: 2000,
        };
        const result = stream ? streamText(call) : await generateText(call);
        if (stream) for await (const _ of (result as unknown as ReturnType<typeof streamText>).textStream);
        messages.push(...(await result.response).messages);
        answers.push(await result.text);
        const steps = await result.steps;
        expect(steps.flatMap((s) => s.toolCalls.map((c) => c.toolName)).filter((n) => WORKMEM_TOOL_NAMES.has(n))).toEqual([]);
        // Each client request's usage is the upstream's summed: what the cache read and wrote, and the rest.
        const upstream = server.requests.slice(before);
        const usage = steps.reduce((n, s) => n + (s.usage.inputTokens ?? 0), 0);
        expect(usage).toBe(upstream.reduce((n, r) => n + r.promptTokens, 0));
        const read = steps.reduce((n, s) => n + (s.usage.inputTokenDetails?.cacheReadTokens ?? 0), 0);
        expect(read).toBe(upstream.reduce((n, r) => n + r.cachedTokens, 0));
      }
      expect(answers[3]).toContain('rose1');
      expect(answers[4]).toContain('rose2');
      expect(ran).toEqual(['word1']);
      // workmem's breakpoints: the system prompt cut from the memory, at most four marks, and the cache read.
      for (const r of server.requests) expect(marks(r.raw)).toBeLessThanOrEqual(4);
      const last = server.requests.at(-1)!.raw as { system: { cache_control?: unknown }[] };
      expect(last.system.length).toBeGreaterThanOrEqual(2);
      expect(last.system[0]!.cache_control).toEqual({ type: 'ephemeral' });
      expect(server.requests.slice(1).some((r) => r.cachedTokens > 0)).toBe(true);
      expect(server.requests.every((r) => r.protocol === 'messages' && r.status === 200)).toBe(true);

      // The trace is written behind the answers: read it once the proxy has closed its sessions.
      await proxy.close();
      const state = await sessionState(sessionIdFor(`messages-${stream}`), { home });
      expect(state.overview).toContain('rose2');
      expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
      // The context view shows what the client sent beside what went upstream: a host record per call.
      expect(state.trace.some((line) => String(line).includes('"k":"host"'))).toBe(true);
    });

  it('with thinking on, sends a tool loop its thinking again before its calls, the client its own', async () => {
    const { proxy, server } = await proxied({ proxy: { contextWindow: 16_000 } });
    const headers = { 'x-workmem-session': 'thinking', 'x-api-key': proxy.token, 'anthropic-version': '2023-06-01' };
    const thinking = { type: 'adaptive', display: 'omitted' };
    const messages: Record<string, unknown>[] = [];
    for (const text of ['My plant1 is rose1.', 'Use the lookup tool with cat.']) {
      messages.push({ role: 'user', content: text });
      for (let i = 0; i < 5; i++) {
        const reply = await post(
          `${proxy.url}/messages`,
          { model: 'workmem-test', max_tokens: 4000, thinking, tools: [LOOKUP], messages, stream: true },
          headers,
        );
        expect(reply.status, reply.text).toBe(200);
        const message = assembledMessage(reply.events);
        messages.push({ role: 'assistant', content: message.content });
        const uses = message.content.filter((b) => b.type === 'tool_use');
        if (!uses.length) break;
        // The thinking that came with its calls opens the client's message too, as Anthropic sends it.
        expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: '', signature: expect.any(String) });
        messages.push({
          role: 'user',
          content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: runClientTool('lookup', JSON.stringify(u.input)) })),
        });
      }
    }
    expect(JSON.stringify(messages)).toContain('cat: a word');
    // The memory was written (workmem's call, in the middle of the first exchange) and the upstream took every request.
    expect(
      server.requests.some((r) =>
        r.body.messages.some((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.function.name === 'write')),
      ),
    ).toBe(true);
    expect(server.requests.every((r) => r.status === 200)).toBe(true);
  });

  it("keeps Anthropic's shape for failures, compacts an overflow once, forwards the client's key and betas", async () => {
    const { proxy, server, home } = await proxied({
      proxy: { contextWindow: 8000, forwardAuth: true },
      server: { apiKey: 'client-key-1234567890' },
    });
    const at = `${proxy.url}/messages`;
    const headers = {
      'x-workmem-session': 'failing',
      'x-api-key': 'client-key-1234567890',
      'x-workmem-token': proxy.token,
      'anthropic-beta': 'some-beta-2025-01-01',
    };
    const ask = (messages: unknown[], extra: Record<string, unknown> = {}) =>
      post(at, { model: 'workmem-test', max_tokens: 500, messages, ...extra }, headers);
    server.inject({ type: 'server_error', status: 529 });
    const overloaded = await ask([{ role: 'user', content: 'hi' }]);
    expect(overloaded).toMatchObject({ status: 529, json: { type: 'error', error: { type: 'overloaded_error' } } });
    expect(server.requests[0]!.headers['anthropic-beta']).toBe('some-beta-2025-01-01');
    expect(server.requests[0]!.headers['x-api-key']).toBe('client-key-1234567890');

    const messages: unknown[] = [];
    for (let i = 1; i <= 6; i++) {
      messages.push({ role: 'user', content: `Small talk ${i}: ${'words and more words, '.repeat(20)}` });
      messages.push({ role: 'assistant', content: (await ask(messages)).json.content });
    }
    server.inject({ type: 'context_length' });
    messages.push({ role: 'user', content: 'My plant1 is rose1.' });
    const before = server.requests.length;
    const answer = await ask(messages, { stream: true });
    expect(assembledMessage(answer.events).stop_reason).toBe('end_turn');
    expect(server.requests[before]!.status).toBe(400);
    const { log } = await sessionState(sessionIdFor('failing'), { home });
    expect(log.filter((e) => e.type === 'compaction' && e.reason === 'overflow').length).toBe(1);

    const noLimit = await post(at, { model: 'workmem-test', messages: [{ role: 'user', content: 'hi' }] }, headers);
    expect(noLimit).toMatchObject({ status: 400, json: { type: 'error', error: { type: 'invalid_request_error' } } });
    const count = await post(`${at}/count_tokens`, { model: 'workmem-test', messages: [] }, headers);
    expect(count).toMatchObject({ status: 404, json: { type: 'error', error: { type: 'not_found_error' } } });
    // The doors, in Anthropic's shape: a browser's Origin, a body past the limit.
    const foreign = await post(at, { model: 'workmem-test', max_tokens: 5, messages: [] }, { ...headers, origin: 'http://evil.example' });
    expect(foreign).toMatchObject({ status: 403, json: { type: 'error', error: { type: 'permission_error' } } });
  });
});
