/**
 * The Responses API through `workmem serve`: the `openai` client's responses.create as an
 * agent loop of its own tools, stateless (store: false, its whole input each time), streamed
 * and not, to the test server speaking the Responses API. The client's calls round-trip;
 * workmem's never reach it; the memory is written; the usage is the sum of the upstream's;
 * reasoning items go upstream again beside the calls they came with; failures keep the
 * upstream's status; what the proxy cannot carry is refused by name.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { WORKMEM_TOOL_NAMES } from '../../src/history/hostLine.js';
import { readResponsesRequest } from '../../src/serve/responsesWire.js';
import { sessionIdFor } from '../../src/session/sessionName.js';
import { proxies, runClientTool, sessionState } from './proxyHarness.js';
import { post } from './sseEvents.js';

const proxied = proxies();

const TOOLS = ['weather', 'lookup'].map((name) => ({
  type: 'function' as const,
  name,
  description: `The ${name} tool`,
  parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
  strict: false,
}));

type Item = Record<string, unknown>;

/** One user turn: ask, run the client's calls, ask again with their outputs, until an answer. */
async function turn(
  openai: OpenAI,
  input: Item[],
  text: string,
  options: { stream: boolean; calls: string[]; usages: Item[] },
): Promise<string> {
  input.push({ role: 'user', content: text });
  for (let i = 0; i < 10; i++) {
    const body = { model: 'workmem-test', input, tools: TOOLS, store: false, include: ['reasoning.encrypted_content'] } as never;
    let response: { output: Item[]; usage: Item | null };
    if (options.stream) {
      let done: typeof response | null = null;
      const events = (await openai.responses.create({ ...(body as object), stream: true } as never)) as unknown as AsyncIterable<unknown>;
      for await (const event of events) {
        const e = event as { type: string; response?: typeof response };
        if (e.type === 'response.completed') done = e.response!;
      }
      response = done!;
    } else response = (await openai.responses.create(body)) as unknown as typeof response;
    options.usages.push(response.usage!);
    input.push(...response.output);
    const calls = response.output.filter((o) => o.type === 'function_call');
    if (!calls.length)
      return response.output
        .filter((o) => o.type === 'message')
        .flatMap((o) => (o.content as { text: string }[]).map((c) => c.text))
        .join('');
    for (const call of calls) {
      options.calls.push(call.name as string);
      input.push({
        type: 'function_call_output',
        call_id: call.call_id,
        output: runClientTool(call.name as string, call.arguments as string),
      });
    }
  }
  throw new Error('the agent loop did not end');
}

describe('the Responses API through workmem serve', () => {
  it('reads items as the session holds them: an answer and its calls one message, reasoning beside its calls, state it cannot carry refused', () => {
    const request = readResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use tools.' }] },
        { role: 'user', content: 'hi' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'sealed' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'spawn', namespace: 'agents', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
      ],
      tools: [...TOOLS, { type: 'web_search' }],
      stream: true,
    });
    expect(request.instructions).toBe('Be brief.\n\nUse tools.');
    const messages = Array.from({ length: request.conversation.length }, (_, i) => request.conversation.at(i));
    expect(messages).toEqual([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'agents.spawn', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
      { role: 'assistant', content: 'Done.' },
    ]);
    expect(request.conversation.shape(1)).toEqual({
      role: 'assistant',
      calls: [
        { id: 'c1', name: 'lookup' },
        { id: 'c2', name: 'agents.spawn' },
      ],
    });
    expect(request.reasoning.of(['c2'])).toEqual([{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'sealed' }]);
    expect(request.tools.map((t) => t.name)).toEqual(['weather', 'lookup']);
    expect(request.otherTools).toEqual([{ type: 'web_search' }]);
    // Passed through as sent when no session takes it (its stream flags aside).
    expect(request.body).toMatchObject({ model: 'm', instructions: 'Be brief.' });
    expect((request.body.input as unknown[]).length).toBe(9);

    const refused = (body: Item) => {
      try {
        readResponsesRequest({ model: 'm', input: 'hi', ...body });
      } catch (error) {
        return { message: (error as Error).message, param: (error as { param: string }).param };
      }
      throw new Error('accepted');
    };
    expect(refused({ previous_response_id: 'resp_1' })).toMatchObject({
      param: 'previous_response_id',
      message: expect.stringMatching(/whole conversation/),
    });
    expect(refused({ conversation: 'conv_1' }).param).toBe('conversation');
    expect(refused({ input: [{ type: 'item_reference', id: 'msg_1' }] }).param).toBe('input[0]');
    expect(refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:,' }] }] }).message).toMatch(
      /"input_image" part/,
    );
    expect(refused({ input: [{ type: 'web_search_call', id: 'ws_1' }] }).message).toMatch(/"web_search_call" item/);
  });

  for (const stream of [false, true])
    it(`runs an agent of its own tools, memory kept behind it (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, server, home } = await proxied({ proxy: { contextWindow: 8000 } });
      const openai = new OpenAI({
        baseURL: proxy.url,
        apiKey: proxy.token,
        maxRetries: 0,
        defaultHeaders: { 'x-workmem-session': `responses-${stream}` },
      });
      const input: Item[] = [{ role: 'developer', content: 'You help with a garden.' }];
      const calls: string[] = [];
      const usages: Item[] = [];
      const prompts = [
        'My plant1 is rose1.',
        'My plant2 is rose2.',
        'Use the weather tool with city1.',
        'Use the lookup tool with word1.',
        'What is my plant1?',
        'What is my plant2?',
      ];
      const answers: string[] = [];
      for (const text of prompts) {
        const before = server.requests.length;
        const used = usages.length;
        answers.push(await turn(openai, input, text, { stream, calls, usages }));
        // Each client request's usage is the sum of the upstream's for the calls it took.
        const upstream = server.requests.slice(before);
        const reported = usages.slice(used).reduce((n, u) => n + (u.input_tokens as number), 0);
        expect(reported).toBe(upstream.reduce((n, r) => n + r.promptTokens, 0));
      }
      expect(answers[4]).toContain('rose1');
      expect(answers[5]).toContain('rose2');
      expect(calls).toEqual(['weather', 'lookup']);
      expect(input.some((i) => i.type === 'function_call' && WORKMEM_TOOL_NAMES.has(i.name as string))).toBe(false);
      // The test server refuses reasoning sent back altered: every reasoning item the client holds went up as it came.
      expect(input.some((i) => i.type === 'reasoning')).toBe(true);
      const isWeather = (i: Item) => i.type === 'function_call' && i.name === 'weather';
      const sent = server.requests.map((r) => (r.raw as { input: Item[] }).input).find((items) => items.some(isWeather))!;
      const weather = sent.findIndex(isWeather);
      expect(sent.slice(weather - 2, weather).map((i) => i.type)).toContain('reasoning');
      expect(server.requests.every((r) => r.protocol === 'responses' && r.status === 200)).toBe(true);

      // The trace is written behind the answers: read it once the proxy has closed its sessions.
      await proxy.close();
      const state = await sessionState(sessionIdFor(`responses-${stream}`), { home });
      expect(state.overview).toContain('rose2');
      expect(state.log.filter((e) => e.type === 'branch')).toEqual([]);
      // The context view shows what the client sent beside what went upstream: a host record per call.
      expect(state.trace.some((line) => String(line).includes('"k":"host"'))).toBe(true);
      expect(state.log.filter((e) => e.type === 'message' && e.message.role === 'user').length).toBe(prompts.length);
    });

  it('keeps the upstream status and OpenAI-shaped body, compacts an overflow once, refuses by name', async () => {
    const { proxy, server, home } = await proxied({ proxy: { contextWindow: 8000 } });
    const at = `${proxy.url}/responses`;
    const headers = { 'x-workmem-session': 'failing', authorization: `Bearer ${proxy.token}` };
    server.inject({ type: 'rate_limit', retryAfterSeconds: 4 });
    const limited = await post(at, { model: 'workmem-test', input: 'hi' }, headers);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('4');
    expect(limited.json.error).toMatchObject({ code: 'rate_limit_exceeded' });

    const input: Item[] = [];
    for (let i = 1; i <= 6; i++) {
      input.push({ role: 'user', content: `Small talk ${i}: ${'words and more words, '.repeat(20)}` });
      input.push(...((await post(at, { model: 'workmem-test', input }, headers)).json.output as Item[]));
    }
    server.inject({ type: 'context_length' });
    input.push({ role: 'user', content: 'My plant1 is rose1.' });
    const before = server.requests.length;
    const answer = await post(at, { model: 'workmem-test', input, stream: true }, headers);
    expect(answer.events.at(-1)!.data.type).toBe('response.completed');
    expect(server.requests[before]!.status).toBe(400);
    const { log } = await sessionState(sessionIdFor('failing'), { home });
    expect(log.filter((e) => e.type === 'compaction' && e.reason === 'overflow').length).toBe(1);

    const stored = await post(at, { model: 'workmem-test', input: 'hi', previous_response_id: 'resp_1' }, headers);
    expect(stored.status).toBe(400);
    expect(stored.json.error).toMatchObject({ type: 'invalid_request_error', param: 'previous_response_id' });
  });
});
