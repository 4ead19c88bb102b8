/**
 * A conversation keeps its session, and only its own, when the client names none (no
 * x-workmem-session, no user): the proxy finds the session by what it holds (docs/proxy.md,
 * "Sessions"). An agent's first request (it offers tools) opens a session; an opening changed
 * between runs continues it; a one-shot side request
 * (a title) and a side request under other instructions (a background extraction over the
 * conversation) pass through without reading or writing any memory and create nothing; two
 * conversations the same so far stay apart from the message they part at; a refused request
 * creates nothing; a proxy started again finds the sessions as they were.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { startProxy } from '../../src/serve/proxyServer.js';
import { agentTurn, client, clientTools, proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();

/** The sessions a home holds. */
function sessionsIn(home: string): string[] {
  const root = join(home, 'sessions');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((cwd) => readdirSync(join(root, cwd)));
}

/** A client that notes the session each answer came from (null: passed through without one). */
function watched(proxy: Parameters<typeof client>[0]) {
  const ids: (string | null)[] = [];
  const openai = client(proxy);
  const noting = {
    chat: {
      completions: {
        create: async (body: never) => {
          const { data, response } = await openai.chat.completions.create(body).withResponse();
          ids.push(response.headers.get('x-workmem-session'));
          return data;
        },
      },
    },
  } as unknown as OpenAI;
  const turn = (messages: ChatCompletionMessageParam[], text: string): Promise<string> => agentTurn(noting, messages, text);
  return { ids, turn, last: () => ids.at(-1) ?? null };
}

const SYSTEM: ChatCompletionMessageParam = { role: 'system', content: 'You are a gardening agent.\nAnswer briefly.\nKeep notes.' };

describe('the session a conversation keeps, and only its own', () => {
  it('continues when the client changes its opening between runs (a date line), its memory with it', async () => {
    const { proxy, home } = await proxied();
    const { turn, last } = watched(proxy);
    const opening = (day: string) => `<reminder>Today is ${day}.</reminder>\nMy plant1 is rose1.`;
    const messages: ChatCompletionMessageParam[] = [SYSTEM];
    await turn(messages, opening('Monday'));
    // An agent's first request (it offers its tools): a session of its own at once.
    const id = last()!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await turn(messages, 'My plant2 is rose2.');
    expect(last()).toBe(id);
    // The next run: the client rebuilds its first message with another day.
    messages[1] = { role: 'user', content: opening('Tuesday') };
    expect(await turn(messages, 'What is my plant2?')).toContain('rose2');
    expect(last()).toBe(id);
    const { log, overview, meta } = await sessionState(id, { home });
    expect(overview).toContain('rose2');
    // Titled by the user's words, not by what the agent put before them.
    expect(meta?.title).toBe('My plant1 is rose1.');
    expect(log.filter((e) => e.type === 'branch')).toHaveLength(1);
    expect(sessionsIn(home)).toEqual([id]);
  });

  it('passes a title request through: no session, no memory read, nothing created', async () => {
    const { proxy, server, home } = await proxied();
    const { turn, last } = watched(proxy);
    const messages: ChatCompletionMessageParam[] = [SYSTEM];
    for (const text of ['My plant1 is rose1.', 'My plant2 is rose2.', 'What is my plant1?']) await turn(messages, text);
    const id = last()!;
    const before = sessionsIn(home);
    for (const first of ['My plant1 is rose1.', 'My tree1 is oak1.']) {
      const title = [
        { role: 'system' as const, content: 'You are a title generator. You output ONLY a thread title.' },
        { role: 'user' as const, content: 'Generate a title for this conversation:\n' },
        { role: 'user' as const, content: first },
      ];
      const { data, response } = await client(proxy)
        .chat.completions.create({ model: 'workmem-test', messages: title, max_tokens: 32 })
        .withResponse();
      expect(response.headers.get('x-workmem-session')).toBeNull();
      expect(data.choices[0]!.message.content).toBeTruthy();
      // As the client sent it: no memory, no workmem tools.
      expect(server.requests.at(-1)!.body.messages).toEqual(title);
      expect(server.requests.at(-1)!.body.tools).toBeUndefined();
    }
    expect(sessionsIn(home)).toEqual(before);
    expect((await sessionState(id, { home })).overview).not.toContain('oak1');
  });

  it('passes a background extraction over the conversation through: other instructions, the memory neither read nor written', async () => {
    const { proxy, server, home } = await proxied();
    const { turn, last } = watched(proxy);
    const messages: ChatCompletionMessageParam[] = [SYSTEM];
    for (const text of ['My plant1 is rose1.', 'My plant2 is rose2.']) await turn(messages, text);
    const id = last()!;
    const before = await sessionState(id, { home });
    const extraction: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are now acting as the memory extraction subagent.\nSave durable facts.' },
      ...messages.slice(1),
    ];
    const extractor = watched(proxy);
    // It asks for its own tools (the names of workmem's among them), and runs one.
    await extractor.turn(extraction, 'Extract memories. My note1 is extracted1. Use the lookup tool with notes.');
    expect(extractor.ids.every((i) => i === null)).toBe(true);
    for (const request of server.requests.slice(-2)) expect(JSON.stringify(request.body)).not.toContain('<working_memory');
    const after = await sessionState(id, { home });
    expect(after.log).toHaveLength(before.log.length);
    expect(after.overview).toBe(before.overview);
    expect(sessionsIn(home)).toEqual([id]);
    // The conversation goes on in its session.
    await turn(messages, 'What is my plant1?');
    expect(last()).toBe(id);
  });

  it('keeps two conversations that open the same way apart from the message they part at', async () => {
    const { proxy, home } = await proxied();
    const a = watched(proxy);
    const b = watched(proxy);
    const ma: ChatCompletionMessageParam[] = [SYSTEM];
    const mb: ChatCompletionMessageParam[] = [SYSTEM];
    // The same first turn, the same answer (the model is deterministic): one conversation so far.
    await a.turn(ma, 'Hello there.');
    await b.turn(mb, 'Hello there.');
    for (let t = 1; t <= 3; t++) {
      await a.turn(ma, `My plant${t} is rose${t}.`);
      await b.turn(mb, `My plant${t} is tulip${t}.`);
    }
    expect(a.last()).not.toBe(b.last());
    expect(await a.turn(ma, 'What is my plant1?')).toContain('rose1');
    expect(await b.turn(mb, 'What is my plant1?')).toContain('tulip1');
    const [ia, ib] = [a.last()!, b.last()!];
    expect(a.ids.slice(1).every((i) => i === ia)).toBe(true);
    expect(b.ids.slice(1).every((i) => i === ib)).toBe(true);
    const [sa, sb] = [await sessionState(ia, { home }), await sessionState(ib, { home })];
    expect(sa.overview).toContain('rose3');
    expect(sa.overview).not.toContain('tulip');
    expect(sb.overview).toContain('tulip3');
    expect(sb.overview).not.toContain('rose');
  });

  it('creates nothing for a refused request, and finds its sessions again after a restart', async () => {
    const { proxy, server, home } = await proxied();
    const { turn, last } = watched(proxy);
    const messages: ChatCompletionMessageParam[] = [SYSTEM];
    // It would open a session, but its message is too large to keep: refused, and nothing is left of it.
    const refused = await client(proxy)
      .chat.completions.create({
        model: 'workmem-test',
        messages: [SYSTEM, { role: 'user', content: 'x'.repeat(1_100_000) }],
        tools: clientTools,
      })
      .catch((error: { status?: number }) => error);
    expect((refused as { status?: number }).status).toBe(400);
    expect(sessionsIn(home)).toEqual([]);
    await turn(messages, 'My plant1 is rose1.');
    await turn(messages, 'My plant2 is rose2.');
    const id = last()!;
    await proxy.close();
    const again = await startProxy({ upstream: server.baseURL, home, cwd: '/work/proxied', env: {} });
    try {
      const next = watched(again);
      expect(await next.turn(messages, 'What is my plant1?')).toContain('rose1');
      expect(next.last()).toBe(id);
    } finally {
      await again.close();
    }
  });
});
