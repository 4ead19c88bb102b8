/**
 * Cache-aware requests: the system prompt, the working memory and the history go out as
 * separate parts, with breakpoints for a provider with explicit caching, and the server's
 * cached input tokens come back in turn_end, the turn's result and the status line.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkModel } from '../../src/aiSdk/index.js';
import { openaiChat } from '../../src/llm/openaiChat.js';
import { statusLine } from '../../src/cli/render.js';
import { collect, newSession, ofType, testServers } from '../helpers.js';

const serve = testServers();
const question = (i: number) => `Question ${i}: ${'tell me more about the parser and its error recovery '.repeat(40)}`;
const marked = (m: Record<string, unknown>) =>
  !!m.cache_control || (Array.isArray(m.content) && m.content.some((p: { cache_control?: unknown }) => p.cache_control));
/** A message's text, whether sent whole or in parts. */
const textOf = (content: unknown): string =>
  Array.isArray(content) ? content.map((p: { text?: unknown }) => (typeof p.text === 'string' ? p.text : '')).join('') : String(content);
/** The last message sent in two parts, its own text marked and the request's tail not. */
const ownTextMarked = (m: Record<string, unknown>): boolean => {
  const parts = m.content as { text: string; cache_control?: unknown }[];
  return (
    Array.isArray(parts) &&
    parts.length === 2 &&
    !!parts[0]!.cache_control &&
    !parts[1]!.cache_control &&
    parts[1]!.text.startsWith('\n\n<context_meta>')
  );
};

describe('explicit caching through aiSdkModel', () => {
  it('sends the system prompt and the memory as two marked parts and marks the history prefix; the cache serves most of the input', async () => {
    const server = await serve(() => ({ content: 'Noted.' }), { promptCaching: 'explicit' });
    const provider = createOpenAICompatible({ name: 'workmem-test', baseURL: server.baseURL, apiKey: 'test', includeUsage: true });
    const llm = aiSdkModel(provider.chatModel('workmem-test'), { caching: 'explicit' });
    const session = await newSession({ llm, settings: { injectHistory: true } });
    const events = collect(session);
    for (let i = 1; i <= 6; i++) await session.prompt(question(i));

    const body = server.requests.at(-1)!.body;
    const messages = body.messages as unknown as Record<string, unknown>[];
    // The system prompt, then the memory, each a system message with a breakpoint.
    expect(messages.slice(0, 2).map((m) => [m.role, marked(m)])).toEqual([
      ['system', true],
      ['system', true],
    ]);
    expect(String(messages[1]!.content)).toMatch(/^\n\n<working_memory file="working-memory\/overview\.md">/);
    expect(String(messages[0]!.content)).not.toContain('<working_memory file=');
    // The history up to the last message's own text is marked, the tail after it is not; 3 marks in all (Anthropic allows 4).
    expect(ownTextMarked(messages.at(-1)!)).toBe(true);
    expect(marked(messages.at(-2)!)).toBe(false);
    expect(messages.filter(marked)).toHaveLength(3);

    const ends = ofType(events, 'turn_end');
    expect(ends[0]!.usage).toMatchObject({ cached: 0 });
    for (const end of ends.slice(1)) {
      expect(end.usage!.cached).toBeGreaterThan(0);
      expect(end.usage!.cached).toBeLessThan(end.usage!.input);
    }
    // Each turn the cache serves everything up to the previous question (its own text was marked, its tail not):
    // more every turn.
    const cached = ends.map((e) => e.usage!.cached);
    expect(cached).toEqual([...new Set(cached)].sort((x, y) => x - y));
    const last = ends.at(-1)!.usage!;
    expect(last.cached / last.input).toBeGreaterThan(0.7);
    expect(server.requests.at(-1)!.cachedTokens).toBe(last.cached);
    // prompt_built says how much of the request is the cacheable prefix.
    const built = ofType(events, 'prompt_built').at(-1)!.tokens;
    expect(built.cacheable).toBeGreaterThan(built.system + built.memory);
    expect(built.cacheable).toBeLessThan(built.counted);
    // The status line shows the share of input the cache served.
    expect(statusLine(session)).toMatch(/ · \d+ % of input cached\]$/);
    await session.close();
  });

  it('hands the AI SDK at most 4 breakpoints as Anthropic cacheControl (and Bedrock cachePoint); none when caching is automatic', async () => {
    const stream = () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'text-delta' as const, id: 't', delta: 'ok' },
          {
            type: 'finish' as const,
            finishReason: { unified: 'stop' as const, raw: 'stop' },
            usage: {
              inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: undefined },
              outputTokens: { total: 1, text: 1, reasoning: undefined },
            },
          },
        ],
      }),
    });
    const anthropicLike = new MockLanguageModelV3({
      provider: 'anthropic.messages',
      modelId: 'claude-sonnet-4-5',
      doStream: async () => stream(),
    });
    const llm = aiSdkModel(anthropicLike);
    expect(llm.caching).toBe('explicit');
    const session = await newSession({ llm, settings: { injectHistory: true } });
    await session.prompt('first');
    await session.prompt('second');
    const prompt = (anthropicLike.doStreamCalls.at(-1) as LanguageModelV3CallOptions).prompt;
    const marks = prompt.flatMap((m, i) => (m.providerOptions?.anthropic ? [i] : []));
    expect(marks).toEqual([0, 1]);
    // The last message's own text is the third: its first part, the tail after it unmarked.
    const last = prompt.at(-1)!.content as { providerOptions?: { anthropic?: unknown } }[];
    expect(last.map((p) => !!p.providerOptions?.anthropic)).toEqual([true, false]);
    expect(prompt[0]!.providerOptions).toMatchObject({
      anthropic: { cacheControl: { type: 'ephemeral' } },
      bedrock: { cachePoint: { type: 'default' } },
    });
    await session.close();

    const plain = new MockLanguageModelV3({ provider: 'openai.chat', modelId: 'gpt-4o', doStream: async () => stream() });
    const automatic = await newSession({ llm: aiSdkModel(plain), settings: { injectHistory: true } });
    await automatic.prompt('first');
    const sent = (plain.doStreamCalls[0] as LanguageModelV3CallOptions).prompt;
    expect(sent.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(sent.some((m) => m.providerOptions)).toBe(false);
    await automatic.close();
  });
});

describe('automatic caching through openaiChat', () => {
  it('one system message as today; the cached tokens the server reports reach turn_end and the turn result', async () => {
    const server = await serve(() => ({ content: 'Noted.' }));
    const session = await newSession({
      llm: openaiChat({ baseURL: server.baseURL, apiKey: 'test', model: 'workmem-test', env: {} }),
      settings: { injectHistory: true },
    });
    const events = collect(session);
    let result;
    for (let i = 1; i <= 4; i++) result = await session.prompt(question(i));
    const messages = server.requests.at(-1)!.body.messages;
    expect(messages.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(JSON.stringify(messages)).not.toContain('cache_control');
    const usage = ofType(events, 'turn_end').at(-1)!.usage!;
    expect(usage.cached % 128).toBe(0);
    expect(usage.cached).toBeGreaterThan(0);
    expect(usage.cached).toBe(server.requests.at(-1)!.cachedTokens);
    expect(result!.usage).toEqual(usage);
    expect(session.state.usage!.input).toBe(server.requests.reduce((n, r) => n + r.promptTokens, 0));
    await session.close();
  });
});

describe('explicit caching with memoryPosition', () => {
  /** Six turns through aiSdkModel on explicit caching; the model writes its memory in turn 4. */
  async function run(memoryPosition: 'before-history' | 'after-history', memoryRefresh: 'every-write' | 'when-cheap' = 'every-write') {
    const server = await serve(
      (body) => {
        const last = body.messages.at(-1)!;
        return last.role === 'user' && textOf(last.content).includes('Question 4:')
          ? {
              toolCalls: [
                {
                  id: 'call_w',
                  name: 'write',
                  arguments: JSON.stringify({
                    path: 'working-memory/overview.md',
                    content: '# Working Memory\n\n- The parser recovers at statement ends.\n',
                  }),
                },
              ],
            }
          : { content: 'Noted.' };
      },
      { promptCaching: 'explicit' },
    );
    const provider = createOpenAICompatible({ name: 'workmem-test', baseURL: server.baseURL, apiKey: 'test', includeUsage: true });
    const session = await newSession({
      llm: aiSdkModel(provider.chatModel('workmem-test'), { caching: 'explicit' }),
      settings: { injectHistory: true, memoryPosition, memoryRefresh },
    });
    for (let i = 1; i <= 6; i++) await session.prompt(question(i));
    await session.close();
    const afterWrite = server.requests.findIndex((r) => (r.body.messages.at(-1) as { role: string }).role === 'tool');
    expect(afterWrite).toBeGreaterThan(0);
    return { server, afterWrite };
  }

  it("'after-history': the system prompt is one marked part without the memory, the history before the last message is marked, and a memory write keeps the history cached", async () => {
    const after = await run('after-history');
    const before = await run('before-history');
    const messages = after.server.requests.at(-1)!.body.messages as unknown as Record<string, unknown>[];
    expect(messages.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(marked(messages[0]!)).toBe(true);
    expect(String(messages[0]!.content)).not.toContain('<working_memory file=');
    // The next request sends the last message without the memory: the history before it is the prefix.
    expect(marked(messages.at(-2)!)).toBe(true);
    expect(marked(messages.at(-1)!)).toBe(false);
    expect(messages.filter(marked)).toHaveLength(2);
    // The memory block is read after the history, at the start of the last message (which is never cached).
    const lastText = textOf(messages.at(-1)!.content);
    expect(lastText.startsWith('<working_memory file="working-memory/overview.md">')).toBe(true);
    expect(lastText).toContain('The parser recovers at statement ends.');

    // The request after the write: before the history, the whole history is new to the cache; after it, only the last exchange.
    const share = ({ server, afterWrite }: Awaited<ReturnType<typeof run>>) =>
      server.requests[afterWrite]!.cachedTokens / server.requests[afterWrite]!.promptTokens;
    expect(share(after)).toBeGreaterThan(0.7);
    expect(share(before)).toBeLessThan(0.5);
    // Before the history with the memory held in its place (memoryRefresh 'when-cheap', the default), the write's change
    // goes in the tail and the history stays cached too.
    expect(share(await run('before-history', 'when-cheap'))).toBeGreaterThan(0.7);
  });
});

describe('explicit caching with pinned messages', () => {
  it('in phase 2 the end of the pins sent first is a breakpoint: after a memory write the cache serves them again, though the window moves on', async () => {
    const server = await serve(
      (body) => {
        const last = body.messages.at(-1)!;
        return last.role === 'user' && textOf(last.content).includes('Question 3:')
          ? {
              toolCalls: [
                {
                  id: 'call_w',
                  name: 'write',
                  arguments: JSON.stringify({ path: 'working-memory/overview.md', content: '# Working Memory\n\n- Parser notes.\n' }),
                },
              ],
            }
          : { content: 'Noted.' };
      },
      { promptCaching: 'explicit' },
    );
    const provider = createOpenAICompatible({ name: 'workmem-test', baseURL: server.baseURL, apiKey: 'test', includeUsage: true });
    const llm = aiSdkModel(provider.chatModel('workmem-test'), { caching: 'explicit' });
    const rules = `Rules: ${'cite the parser source by file and line, and never guess at behaviour. '.repeat(30)}`;
    const session = await newSession({ llm, pinned: [rules], settings: { historyMode: 'phase2', recentTurns: 1 } });
    const events = collect(session);
    for (let i = 1; i <= 6; i++) await session.prompt(question(i));
    await session.close();

    const built = ofType(events, 'prompt_built');
    expect(built).toHaveLength(server.requests.length);
    const pinnedTokens = session.history.items[0]!.tokens;
    for (const [i, request] of server.requests.entries()) {
      const messages = request.body.messages as unknown as Record<string, unknown>[];
      // The system prompt, the memory, the rules, then the window.
      expect(String(messages[2]!.content)).toContain('Rules: cite the parser');
      if (built[i]!.range[0] <= 1) continue;
      // The rules are marked, as the system parts and the history before the last message are.
      expect(marked(messages[2]!), `request ${i + 1}`).toBe(true);
      expect(messages.filter(marked)).toHaveLength(4);
    }
    // The last turns come after the memory write, each with a window of its own: the prefix up to the rules is served from the cache.
    for (const i of [server.requests.length - 2, server.requests.length - 1]) {
      const t = built[i]!.tokens;
      expect(server.requests[i]!.cachedTokens, `request ${i + 1}`).toBeGreaterThanOrEqual(t.system + t.memory + pinnedTokens - 50);
    }
  });
});
