/**
 * The Responses and Messages doors keep what the Chat Completions door does (docs/proxy.md):
 * the proxy's token asked of every request, in the protocol's shape; a one-shot first request
 * passed through as the client sent it, creating nothing; an agent's conversation found by
 * what it holds, turn after turn, with no header naming it; one log line per request; a
 * stalled upstream cut by the watchdog. Written once in the exchange, whatever the wire.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { proxies } from './proxyHarness.js';
import { post } from './sseEvents.js';

const proxied = proxies();

function sessionsIn(home: string): string[] {
  const root = join(home, 'sessions');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((cwd) => readdirSync(join(root, cwd)));
}

type Door = {
  name: 'responses' | 'messages';
  path: string;
  /** The client's key, as the protocol's clients send it. */
  key: (token: string) => Record<string, string>;
  /** A request of one user text over the conversation so far, with a tool of its own or none. */
  request: (held: unknown[], text: string, withTools: boolean) => { body: Record<string, unknown>; held: unknown[] };
  /** The conversation with the answer added, as the client holds it. */
  answered: (held: unknown[], json: Record<string, unknown>) => unknown[];
};

const schema = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] };

const DOORS: Door[] = [
  {
    name: 'responses',
    path: '/responses',
    key: (token) => ({ authorization: `Bearer ${token}` }),
    request: (before, text, withTools) => {
      const held = [...before, { role: 'user', content: text }];
      const tools = withTools ? { tools: [{ type: 'function', name: 'lookup', description: 'Look up', parameters: schema }] } : {};
      return { body: { model: 'workmem-test', instructions: 'You are a gardening agent.', input: held, ...tools }, held };
    },
    answered: (held, json) => [...held, ...(json.output as unknown[])],
  },
  {
    name: 'messages',
    path: '/messages',
    key: (token) => ({ 'x-api-key': token }),
    request: (before, text, withTools) => {
      const held = [...before, { role: 'user', content: text }];
      const tools = withTools ? { tools: [{ name: 'lookup', description: 'Look up', input_schema: schema }] } : {};
      return { body: { model: 'workmem-test', max_tokens: 2000, system: 'You are a gardening agent.', messages: held, ...tools }, held };
    },
    answered: (held, json) => [...held, { role: 'assistant', content: json.content }],
  },
];

describe.each(DOORS)('the $name door, as the chat door', (door) => {
  it('asks for the token, passes a one-shot through, finds an agent conversation by what it holds, logs each request', async () => {
    const lines: string[] = [];
    const { proxy, server, home } = await proxied({ proxy: { contextWindow: 16_000, log: (line) => lines.push(line) } });
    const at = `${proxy.url}${door.path}`;

    const first = door.request([], 'Name this chat: my plants.', false);
    const refused = await post(at, first.body);
    expect(refused.status).toBe(401);
    expect(door.name === 'messages' ? refused.json.type : typeof refused.json.error).toBe(door.name === 'messages' ? 'error' : 'object');

    // A one-shot (no tools, nothing held): the client's body upstream as it sent it, no session.
    const title = await post(at, first.body, door.key(proxy.token));
    expect(title.status, title.text).toBe(200);
    expect(title.headers.get('x-workmem-session')).toBeNull();
    expect(server.requests.at(-1)!.raw).toEqual({ ...first.body, stream: true }); // always streamed upstream
    expect(sessionsIn(home)).toEqual([]);

    // An agent's turns (it offers a tool), no header: one session, found by the answers it holds.
    let held: unknown[] = [];
    const ids: (string | null)[] = [];
    for (const text of ['My plant1 is rose1.', 'My plant2 is rose2.', 'What is my plant1?']) {
      const turn = door.request(held, text, true);
      const reply = await post(at, turn.body, door.key(proxy.token));
      expect(reply.status, reply.text).toBe(200);
      ids.push(reply.headers.get('x-workmem-session'));
      held = door.answered(turn.held, reply.json);
    }
    expect(ids[0]).toEqual(expect.any(String));
    expect(new Set(ids)).toEqual(new Set([ids[0]]));
    expect(sessionsIn(home)).toEqual([ids[0]]);
    expect(JSON.stringify(held.at(-1))).toContain('rose1');

    // Each line is written once its response has closed.
    while (lines.length < 5) await new Promise((resolve) => setTimeout(resolve, 20));
    const path = `/v1${door.path}`;
    expect(lines.filter((l) => l.startsWith(`POST ${path} 401`))).toHaveLength(1);
    expect(lines.some((l) => l.startsWith(`POST ${path} 200 session=- how=first`))).toBe(true);
    expect(
      lines.filter((l) => l.startsWith(`POST ${path} 200`) && /how=(new|continues)/.test(l)).map((l) => /how=(\w+)/.exec(l)![1]),
    ).toEqual(['new', 'continues', 'continues']);
    expect(lines.join('\n')).not.toContain('plant1');
  });

  it('cuts an upstream that sends headers, then nothing but keep-alives', async () => {
    const { proxy, server } = await proxied({ proxy: { timeoutMs: 1_500 } });
    server.inject({ type: 'keepalive', everyMs: 100 });
    const turn = door.request([], 'My plant1 is rose1.', true);
    const headers = { ...door.key(proxy.token), 'x-workmem-session': `stalled-${door.name}` };
    const reply = await post(`${proxy.url}${door.path}`, turn.body, headers);
    expect(reply.status).toBe(504);
    // The session's next request is answered.
    const next = await post(`${proxy.url}${door.path}`, turn.body, headers);
    expect(next.status, next.text).toBe(200);
  });
});
