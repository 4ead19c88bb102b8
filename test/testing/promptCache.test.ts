/**
 * workmem/testing's prompt cache: the cached tokens a provider would report, per request,
 * for automatic (OpenAI: the longest shared prefix, from 1,024 tokens on, in 128-token increments) and explicit
 * (Anthropic: entries at cache_control breakpoints) caching.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/history/messages.js';
import type { TestServer } from '../../src/testing/index.js';
import { testServers } from '../helpers.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

const counter = await loadTokenCounter('gpt-4o');
/** Tokens of the request's first `k` messages (and its framing), as the server counts them. */
const through = (messages: ChatMessage[], k: number): number =>
  counter.request(messages, []) - messages.slice(k).reduce((n, m) => n + counter.message(m), 0);
const strip = (messages: Record<string, unknown>[]): ChatMessage[] =>
  messages.map(({ cache_control: _m, ...m }) => m as unknown as ChatMessage);

const serve = testServers();
const SYSTEM = `You are a careful assistant.\n${'Rule: keep the working memory current and concise. '.repeat(250)}`;

async function send(server: TestServer, messages: unknown[], extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'workmem-test', messages, ...extra }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}
const cachedOf = (reply: Record<string, unknown>) =>
  (reply.usage as { prompt_tokens_details?: { cached_tokens: number } }).prompt_tokens_details?.cached_tokens;

const turn = (n: number): ChatMessage[] => [
  { role: 'user', content: `Question ${n}: ${'about the parser '.repeat(60)}` },
  { role: 'assistant', content: `Answer ${n}: ${'it recovers at statement boundaries '.repeat(30)}` },
];

describe('automatic prefix caching (OpenAI-style)', () => {
  it('reports the longest prefix shared with an earlier request, in 128-token increments', async () => {
    const server = await serve(() => ({ content: 'ok' }));
    const first: ChatMessage[] = [{ role: 'system', content: SYSTEM }, ...turn(1), { role: 'user', content: 'next' }];
    expect(cachedOf(await send(server, first))).toBe(0);
    const second: ChatMessage[] = [...first.slice(0, -1), ...turn(2), { role: 'user', content: 'next again' }];
    const cached = cachedOf(await send(server, second))!;
    // Shared: the system message and turn 1 (the next message is another user message; "next" is
    // not a prefix of "Question 2"), rounded down to a multiple of 128.
    expect(cached).toBe(Math.floor(through(second, 3) / 128) * 128);
    expect(cached).toBeGreaterThanOrEqual(2048);
    expect(server.requests[1]!.cachedTokens).toBe(cached);
  });

  it('another increment can be chosen, for a provider that caches in larger blocks', async () => {
    const server = await serve(() => ({ content: 'ok' }), { promptCaching: { mode: 'automatic', granularity: 1024 } });
    const first: ChatMessage[] = [{ role: 'system', content: SYSTEM }, ...turn(1), { role: 'user', content: 'next' }];
    await send(server, first);
    const second: ChatMessage[] = [...first.slice(0, -1), ...turn(2), { role: 'user', content: 'next again' }];
    const cached = cachedOf(await send(server, second))!;
    expect(cached).toBe(Math.floor(through(second, 3) / 1024) * 1024);
    expect(cached % 1024).toBe(0);
  });

  it('a prefix under 1,024 tokens is not cached; another session shares nothing; off reports no details', async () => {
    const server = await serve(() => ({ content: 'ok' }));
    const short = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ];
    await send(server, short);
    expect(cachedOf(await send(server, short))).toBe(0);
    const long = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'hi' },
    ];
    await send(server, long, { prompt_cache_key: 'a' });
    expect(cachedOf(await send(server, long, { prompt_cache_key: 'b' }))).toBe(0);
    expect(cachedOf(await send(server, long, { prompt_cache_key: 'a' }))).toBeGreaterThanOrEqual(1024);
    const off = await serve(() => ({ content: 'ok' }), { promptCaching: 'off' });
    await send(off, long);
    expect((await send(off, long)).usage).not.toHaveProperty('prompt_tokens_details');
  });

  it('when the memory changes, the part of the system message before it stays cached', async () => {
    const server = await serve(() => ({ content: 'ok' }));
    await send(server, [
      { role: 'system', content: `${SYSTEM}\n<memory>v1</memory>` },
      { role: 'user', content: 'hi' },
    ]);
    const cached = cachedOf(
      await send(server, [
        { role: 'system', content: `${SYSTEM}\n<memory>v2, longer</memory>` },
        { role: 'user', content: 'hi' },
      ]),
    )!;
    expect(cached).toBeGreaterThanOrEqual(1024);
    expect(cached).toBeLessThanOrEqual(server.requests[0]!.promptTokens);
  });
});

describe('explicit caching (Anthropic-style breakpoints)', () => {
  const mark = { cache_control: { type: 'ephemeral' } };

  it('reads entries written at earlier breakpoints, also one up to 20 messages before a breakpoint that moved', async () => {
    const server = await serve(() => ({ content: 'ok' }), { promptCaching: 'explicit' });
    const history = [...turn(1), ...turn(2), ...turn(3)];
    const a = [
      { role: 'system', content: SYSTEM, ...mark },
      ...history.slice(0, 3),
      { ...history[3]!, ...mark },
      { role: 'user', content: 'q' },
    ];
    expect(cachedOf(await send(server, a))).toBe(0);
    // The next request moves the history breakpoint two messages on: it reads the old one.
    const b = [
      { role: 'system', content: SYSTEM, ...mark },
      ...history.slice(0, 5),
      { ...history[5]!, ...mark },
      { role: 'user', content: 'q2' },
    ];
    // Exactly the prefix through a's history breakpoint (system + 4 messages), not in blocks.
    expect(cachedOf(await send(server, b))).toBe(through(strip(b), 5));
    // The same request again reads its own last breakpoint (system + 6 messages).
    expect(cachedOf(await send(server, b))).toBe(through(strip(b), 7));
    // Without breakpoints nothing is cached, however much is shared.
    expect(cachedOf(await send(server, strip(b)))).toBe(0);
  });

  it('a breakpoint only on the system prompt caches the system prompt when the rest changes', async () => {
    const server = await serve(() => ({ content: 'ok' }), { promptCaching: 'explicit' });
    await send(server, [
      { role: 'system', content: SYSTEM, ...mark },
      { role: 'user', content: 'one' },
    ]);
    const cached = cachedOf(
      await send(server, [{ role: 'system', content: SYSTEM, ...mark }, ...turn(1), { role: 'user', content: 'two' }]),
    )!;
    expect(cached).toBeGreaterThanOrEqual(1024);
    expect(cached).toBeLessThan(server.requests[0]!.promptTokens);
  });
});
