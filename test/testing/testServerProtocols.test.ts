/**
 * workmem/testing's server speaks the Responses API and Anthropic's Messages API as the
 * providers do: each request read as the Chat Completions body the policy reads, each answer
 * in the protocol's own JSON or SSE events in order, with its usage (the prompt cache's reads
 * and, explicit, writes), its errors and its refusals, and the faults injected in its frames.
 */
import { describe, expect, it } from 'vitest';
import { protocolFollower, scripted } from '../../src/testing/index.js';
import { testServers } from '../helpers.js';
import { post } from '../serve/sseEvents.js';

const serve = testServers();
const LOOKUP = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { input: { type: 'string' } } } };
const BASH = { name: 'Bash', description: 'Runs a command', input_schema: { type: 'object', properties: { input: { type: 'string' } } } };

describe('the Responses API', () => {
  it('reads instructions and input items as the policy reads messages, and answers one response', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const input = [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      { role: 'user', content: 'Use the lookup tool with cat.' },
      { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{"input":"cat"}' },
      { type: 'function_call_output', call_id: 'c1', output: 'cat: a word' },
    ];
    const reply = await post(`${server.baseURL}/responses`, { model: 'm', instructions: 'You help.', input, tools: [LOOKUP] });
    expect(reply.status).toBe(200);
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'You help.' },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Use the lookup tool with cat.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"input":"cat"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'cat: a word' },
    ]);
    expect(server.requests[0]).toMatchObject({ protocol: 'responses', path: '/v1/responses', raw: { input } });
    expect(reply.json).toMatchObject({ object: 'response', status: 'completed', model: 'm' });
    const output = reply.json.output as { type: string; content: { text: string }[] }[];
    expect(output.map((o) => o.type)).toEqual(['message']);
    expect(output[0]!.content[0]!.text).toBe('OK: Use the lookup tool with cat.');
    expect(reply.json.usage).toMatchObject({ input_tokens: server.requests[0]!.promptTokens, input_tokens_details: { cached_tokens: 0 } });
  });

  it('streams its events in order, each with its sequence number, and no [DONE]', async () => {
    const server = await serve(
      scripted([{ content: 'Looking it up.', toolCalls: [{ id: 'c9', name: 'lookup', arguments: '{"input":"dog"}' }] }]),
      {
        chunkChars: 5,
      },
    );
    const reply = await post(`${server.baseURL}/responses`, { model: 'm', input: 'hi', tools: [LOOKUP], stream: true });
    const types = reply.events.map((e) => e.data.type);
    expect(reply.events.every((e) => e.event === e.data.type)).toBe(true);
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(types.indexOf('response.output_text.done')).toBeLessThan(types.indexOf('response.function_call_arguments.delta'));
    expect(reply.events.map((e) => e.data.sequence_number)).toEqual(types.map((_, i) => i));
    expect(reply.text).not.toContain('[DONE]');
    const done = reply.events.at(-1)!.data.response as { output: { type: string; call_id?: string; arguments?: string }[] };
    expect(done.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(done.output[1]).toMatchObject({ call_id: 'c9', arguments: '{"input":"dog"}' });
  });

  it('seals its reasoning: sent back as it came it is read, altered it is refused; nothing is stored', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const body = { model: 'm', input: 'hi', include: ['reasoning.encrypted_content'], store: false };
    const first = await post(`${server.baseURL}/responses`, body);
    const reasoning = (first.json.output as Record<string, unknown>[]).find((o) => o.type === 'reasoning')!;
    expect(reasoning.encrypted_content).toEqual(expect.any(String));
    const again = (item: Record<string, unknown>) =>
      post(`${server.baseURL}/responses`, { ...body, input: [{ role: 'user', content: 'hi' }, item, { role: 'user', content: 'and?' }] });
    expect((await again(reasoning)).status).toBe(200);
    const altered = await again({ ...reasoning, encrypted_content: `x${String(reasoning.encrypted_content)}` });
    expect(altered.status).toBe(400);
    expect((altered.json.error as { message: string }).message).toMatch(/could not be verified/);
    const followUp = await post(`${server.baseURL}/responses`, { model: 'm', input: 'and?', previous_response_id: first.json.id });
    expect(followUp.status).toBe(400);
    expect(followUp.json.error).toMatchObject({ param: 'previous_response_id' });
  });

  it("answers faults in OpenAI's words: a rate limit, an overflow, a cut stream", async () => {
    const server = await serve(protocolFollower({ seed: 1 }), { contextWindow: 50 });
    server.inject({ type: 'rate_limit', retryAfterSeconds: 3 });
    const limited = await post(`${server.baseURL}/responses`, { model: 'm', input: 'hi' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(limited.json.error).toMatchObject({ code: 'rate_limit_exceeded' });
    const long = await post(`${server.baseURL}/responses`, { model: 'm', input: 'word '.repeat(200) });
    expect(long.status).toBe(400);
    expect(long.json.error).toMatchObject({
      code: 'context_length_exceeded',
      message: expect.stringMatching(/exceeds the context window/),
    });
    server.inject({ type: 'reset', afterChunks: 2 });
    await expect(post(`${server.baseURL}/responses`, { model: 'm', input: 'hi', stream: true })).rejects.toThrow();
  });
});

describe("Anthropic's Messages API", () => {
  it('reads system blocks, text, tool_use and tool_result blocks as the policy reads messages, and answers one message', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'Use the Bash tool with ls.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { input: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'a.txt' }] }] },
    ];
    const reply = await post(
      `${server.baseURL}/messages`,
      { model: 'm', max_tokens: 100, system: [{ type: 'text', text: 'You help.' }], messages, tools: [BASH] },
      { 'x-api-key': 'k' },
    );
    expect(reply.status).toBe(200);
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'You help.' },
      { role: 'user', content: 'Use the Bash tool with ls.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'Bash', arguments: '{"input":"ls"}' } }],
      },
      { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
    ]);
    expect(reply.json).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'end_turn', content: [{ type: 'text' }] });
    expect(reply.json.usage).toMatchObject({
      input_tokens: server.requests[0]!.promptTokens,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  it('streams its events in order: message_start, ping, each block, message_delta, message_stop', async () => {
    const server = await serve(
      scripted([{ content: 'Running it.', toolCalls: [{ id: 't2', name: 'Bash', arguments: '{"input":"ls"}' }] }]),
      {
        chunkChars: 4,
      },
    );
    const reply = await post(`${server.baseURL}/messages`, {
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const types = reply.events.map((e) => e.data.type);
    expect(reply.events.every((e) => e.event === e.data.type)).toBe(true);
    expect(types.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const starts = reply.events
      .filter((e) => e.data.type === 'content_block_start')
      .map((e) => (e.data.content_block as { type: string }).type);
    expect(starts).toEqual(['text', 'tool_use']);
    expect(reply.events.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: expect.any(Number) } });
  });

  it('refuses what Anthropic refuses: no max_tokens, a tool_use unanswered, a thinking block it did not sign or that is missing', async () => {
    const server = await serve(protocolFollower({ seed: 1 }));
    const at = `${server.baseURL}/messages`;
    const noLimit = await post(at, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(noLimit.status).toBe(400);
    expect(noLimit.json).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens/) },
    });
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: {} }] };
    const unanswered = await post(at, {
      model: 'm',
      max_tokens: 9,
      messages: [{ role: 'user', content: 'hi' }, call, { role: 'user', content: 'well?' }],
    });
    expect(unanswered.status).toBe(400);
    expect((unanswered.json.error as { message: string }).message).toMatch(/`tool_use` ids were found without `tool_result` blocks/);

    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const first = await post(at, {
      model: 'm',
      max_tokens: 2000,
      thinking,
      messages: [{ role: 'user', content: 'Use the Bash tool with ls.' }],
      tools: [BASH],
    });
    const content = first.json.content as Record<string, unknown>[];
    expect(content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: content[1]!.id, content: 'a.txt' }] };
    const loop = (assistant: unknown[]) =>
      post(at, {
        model: 'm',
        max_tokens: 2000,
        thinking,
        tools: [BASH],
        messages: [{ role: 'user', content: 'Use the Bash tool with ls.' }, { role: 'assistant', content: assistant }, result],
      });
    expect((await loop(content)).status).toBe(200);
    const without = await loop(content.slice(1));
    expect(without.status).toBe(400);
    expect((without.json.error as { message: string }).message).toMatch(/must start with a thinking block/);
    const forged = await loop([{ ...content[0], signature: 'forged' }, content[1]]);
    expect(forged.status).toBe(400);
    expect((forged.json.error as { message: string }).message).toMatch(/Invalid `signature`/);
  });

  it('caches at cache_control breakpoints and says what it read and what it wrote', async () => {
    const server = await serve(() => ({ content: 'ok' }), { promptCaching: 'explicit' });
    const system = [{ type: 'text', text: `Rules. ${'Keep the memory current. '.repeat(300)}`, cache_control: { type: 'ephemeral' } }];
    const ask = (text: string) =>
      post(`${server.baseURL}/messages`, { model: 'm', max_tokens: 50, system, messages: [{ role: 'user', content: text }] });
    const first = (await ask('one')).json.usage as Record<string, number> & { input_tokens: number; cache_creation_input_tokens: number };
    const second = (await ask('two')).json.usage as Record<string, number>;
    expect(first.cache_creation_input_tokens).toBeGreaterThanOrEqual(1024);
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.input_tokens + first.cache_creation_input_tokens).toBe(server.requests[0]!.promptTokens);
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    expect(server.requests[1]).toMatchObject({ cachedTokens: first.cache_creation_input_tokens, cacheWriteTokens: 0 });
  });

  it("answers faults in Anthropic's words: overloaded, rate limited, a prompt too long, a wrong key", async () => {
    const server = await serve(protocolFollower({ seed: 1 }), { contextWindow: 60, apiKey: 'right' });
    const ask = (text: string, key = 'right') =>
      post(`${server.baseURL}/messages`, { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: text }] }, { 'x-api-key': key });
    server.inject({ type: 'server_error', status: 529 }, { type: 'rate_limit', retryAfterSeconds: 2 });
    expect(await ask('hi')).toMatchObject({ status: 529, json: { type: 'error', error: { type: 'overloaded_error' } } });
    const limited = await ask('hi');
    expect(limited).toMatchObject({ status: 429, json: { error: { type: 'rate_limit_error' } } });
    expect(limited.headers.get('retry-after')).toBe('2');
    const long = await ask('word '.repeat(100));
    expect(long.status).toBe(400);
    expect((long.json.error as { message: string }).message).toMatch(/^prompt is too long: \d+ tokens > 60 maximum$/);
    expect(await ask('hi', 'wrong')).toMatchObject({ status: 401, json: { error: { type: 'authentication_error' } } });
  });
});
