/**
 * What `workmem serve` answers besides a good conversation: upstream failures with the
 * upstream's status and an OpenAI-shaped body (429 with its retry-after, 500), an overflow
 * compacted once and sent again without the client seeing it, bad requests refused with a
 * reason and nothing recorded, the doors (Host, Origin, a token on loopback and beyond, size
 * limits), /v1/models passed through, session naming, and the upstream's key in no log or trace.
 */
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { sessionIdFor } from '../../src/session/sessionName.js';
import type { ProxyServer } from '../../src/serve/proxyServer.js';
import { agentTurn, client, proxies, sessionState } from './proxyHarness.js';

const proxied = proxies();
const UPSTREAM_KEY = 'sk-upstreamSecretKey0123456789abcdef';

/** A raw request to the proxy, as a program (or a browser) would send it: with the proxy's token unless it says its own. */
function raw(
  proxy: Pick<ProxyServer, 'url' | 'token'>,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string; url?: string; token?: false },
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const target = new URL(options.url ?? proxy.url);
  const own = options.headers && ('authorization' in options.headers || 'x-workmem-token' in options.headers);
  const token = options.token === false || own ? {} : { authorization: `Bearer ${proxy.token}` };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: options.method ?? 'POST',
        path: options.path ?? '/v1/chat/completions',
        headers: { 'content-type': 'application/json', ...token, ...options.headers },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body ?? '');
  });
}

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'workmem-test', messages: [{ role: 'user', content }], ...extra });

describe('workmem serve: failures, doors and names', () => {
  it('keeps the upstream status and body: 429 with retry-after, 500; nothing the client sees is half an answer', async () => {
    const { proxy, server } = await proxied();
    server.inject({ type: 'rate_limit', retryAfterSeconds: 7 });
    const limited = await raw(proxy, { body: chat('hello') });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('7');
    expect(JSON.parse(limited.body).error).toMatchObject({ code: 'rate_limit_exceeded', message: expect.stringContaining('Rate limit') });
    server.inject({ type: 'server_error' });
    const failed = await raw(proxy, { body: chat('hello') });
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.body).error.type).toBe('server_error');
    // The same conversation goes on once the upstream is back.
    const ok = await raw(proxy, { body: chat('hello') });
    expect(ok.status).toBe(200);
  });

  it('compacts an overflow once and asks again: the client gets its answer, never the 400', async () => {
    const { proxy, server, home } = await proxied({ proxy: { contextWindow: 8000 } });
    const openai = client(proxy, { 'x-workmem-session': 'overflowing' });
    const messages: ChatCompletionMessageParam[] = [];
    for (let i = 1; i <= 8; i++) await agentTurn(openai, messages, `Small talk ${i}: ${'words and more words, '.repeat(20)}`);
    server.inject({ type: 'context_length' });
    const before = server.requests.length;
    const answer = await agentTurn(openai, messages, 'My plant1 is rose1.');
    expect(answer).toContain('rose1');
    // The 400, then the call made again (and again after the model wrote its memory through the proxy).
    const statuses = server.requests.slice(before).map((r) => r.status);
    expect(statuses[0]).toBe(400);
    expect(statuses.slice(1).every((s) => s === 200) && statuses.length >= 2).toBe(true);
    const { log } = await sessionState(sessionIdFor('overflowing'), { home });
    expect(log.filter((e) => e.type === 'compaction' && e.reason === 'overflow').length).toBe(1);
  });

  it('refuses what it cannot keep, with the reason, and records nothing of it', async () => {
    const { proxy, server } = await proxied();
    const image = await raw(proxy, {
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }),
    });
    expect(image.status).toBe(400);
    expect(JSON.parse(image.body).error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_content' });
    expect((await raw(proxy, { body: '{not json' })).status).toBe(400);
    expect((await raw(proxy, { body: chat('hi', { n: 2 }) })).status).toBe(400);
    expect(server.requests.length).toBe(0);
  });

  it('takes in a conversation of megabytes (parsed in slices) as a small one, and refuses it malformed with the same 400', async () => {
    const { proxy, server } = await proxied();
    const messages = Array.from({ length: 4001 }, (_, i) =>
      i % 2
        ? { role: 'assistant', content: `Answer ${i}: ${'noted, '.repeat(12)}` }
        : { role: 'user', content: `Question ${i}: ${'and then? '.repeat(10)}` },
    );
    const body = JSON.stringify({ model: 'm', messages });
    expect(body.length).toBeGreaterThan(256 * 1024);
    const broken = await raw(proxy, { body: body.slice(0, -2) });
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.body).error).toMatchObject({ type: 'invalid_request_error', message: 'the request body is not JSON' });
    expect(server.requests.length).toBe(0);
    const whole = await raw(proxy, { body });
    expect(whole.status, whole.body).toBe(200);
    expect(JSON.parse(whole.body).choices[0].message.role).toBe('assistant');
    expect(server.requests.length).toBeGreaterThan(0);
  });

  it('has the doors: its own Host only, no browser Origin, bounded bodies, two routes', async () => {
    const { proxy } = await proxied({ proxy: { maxRequestBytes: 4096 } });
    expect((await raw(proxy, { body: chat('hi'), headers: { host: 'evil.example:80' } })).status).toBe(421);
    expect((await raw(proxy, { body: chat('hi'), headers: { origin: 'http://evil.example' } })).status).toBe(403);
    const big = await raw(proxy, { body: chat('x'.repeat(10_000)) });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body).error.message).toContain('4096');
    const missing = await raw(proxy, { method: 'GET', path: '/v1/embeddings' });
    expect(missing.status).toBe(404);
    const models = await raw(proxy, { method: 'GET', path: '/v1/models' });
    expect(models.status).toBe(200);
    expect(JSON.parse(models.body).data[0].id).toBe('workmem-test');
  });

  it('asks for its token on loopback and beyond: a bearer token, or x-workmem-token beside a forwarded key', async () => {
    const { proxy } = await proxied();
    expect(proxy.token.length).toBeGreaterThanOrEqual(16);
    expect((await raw(proxy, { body: chat('hi'), token: false })).status).toBe(401);
    expect((await raw(proxy, { method: 'GET', path: '/v1/models', token: false })).status).toBe(401);
    expect((await raw(proxy, { body: chat('hi'), headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status).toBe(401);
    expect((await raw(proxy, { body: chat('hi') })).status).toBe(200);
    const token = 'a-serve-token-of-some-length';
    const beyond = await proxied({ proxy: { host: '0.0.0.0', token } });
    const url = beyond.proxy.url.replace('0.0.0.0', '127.0.0.1');
    expect((await raw(beyond.proxy, { url, body: chat('hi'), token: false })).status).toBe(401);
    expect((await raw(beyond.proxy, { url, body: chat('hi'), headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await raw(beyond.proxy, { url, body: chat('hi'), headers: { 'x-workmem-token': token } })).status).toBe(200);
    // With the client's key forwarded upstream, the token rides beside it.
    const forwarded = await proxied({ proxy: { forwardAuth: true } });
    const keyOnly = { authorization: 'Bearer sk-theClientsOwnKey0123456789' };
    expect((await raw(forwarded.proxy, { body: chat('hi'), headers: keyOnly })).status).toBe(401);
    expect(
      (await raw(forwarded.proxy, { body: chat('hi'), headers: { ...keyOnly, 'x-workmem-token': forwarded.proxy.token } })).status,
    ).toBe(200);
  });

  it('names the session by header, else user, else by what it holds: a first request is passed through, its continuation opens one', async () => {
    const { proxy, server } = await proxied();
    const byHeader = await raw(proxy, { body: chat('hi'), headers: { 'x-workmem-session': 'mine' } });
    expect(byHeader.headers['x-workmem-session']).toBe(sessionIdFor('mine'));
    const byUser = await raw(proxy, { body: chat('hi', { user: 'ann' }) });
    expect(byUser.headers['x-workmem-session']).toBe(sessionIdFor('user:ann'));
    const opening = [
      { role: 'system' as const, content: 'Be kind.' },
      { role: 'user' as const, content: 'first' },
    ];
    const first = await raw(proxy, { body: JSON.stringify({ model: 'm', messages: opening }) });
    // Passed through as the client sent it: no session, no memory, no tools of workmem's.
    expect(first.headers['x-workmem-session']).toBeUndefined();
    expect(server.requests.at(-1)!.body.messages).toEqual(opening);
    const continued = [...opening, { role: 'assistant' as const, content: JSON.parse(first.body).choices[0].message.content }];
    const second = await raw(proxy, {
      body: JSON.stringify({ model: 'm', messages: [...continued, { role: 'user', content: 'second' }] }),
    });
    const id = second.headers['x-workmem-session'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.requests.at(-1)!.body.messages[0]!.content).toContain('<working_memory');
    const third = await raw(proxy, {
      body: JSON.stringify({
        model: 'm',
        messages: [
          ...continued,
          { role: 'user', content: 'second' },
          { role: 'assistant', content: JSON.parse(second.body).choices[0].message.content },
          { role: 'user', content: 'third' },
        ],
      }),
    });
    expect(third.headers['x-workmem-session']).toBe(id);
    const other = await raw(proxy, { body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'another first' }] }) });
    expect(other.headers['x-workmem-session']).toBeUndefined();
  });

  it('says one line per request: session, status, calls, tokens, time, and a failure with its cause; never a key or a text', async () => {
    const lines: string[] = [];
    const { proxy } = await proxied({ proxy: { log: (line) => lines.push(line), apiKey: UPSTREAM_KEY } });
    const first = await raw(proxy, { body: chat('My plant1 is rose1.') });
    const named = await raw(proxy, { body: chat('My plant1 is rose1.'), headers: { 'x-workmem-session': 'logged' } });
    await raw(proxy, { body: chat('hi'), token: false });
    const down = await proxied({ proxy: { log: (line) => lines.push(line) }, upstream: { baseURL: 'http://127.0.0.1:9/v1' } as never });
    const failed = await raw(down.proxy, { body: chat('hello'), headers: { 'x-workmem-session': 'down' } });
    expect([first.status, named.status, failed.status]).toEqual([200, 200, 502]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]).toMatch(/^POST \/v1\/chat\/completions 200 session=- how=first calls=1 in=\d+ (cached=\d+ )?out=\d+ ms=\d+$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^POST /v1/chat/completions 200 session=${sessionIdFor('logged').slice(0, 8)} how=header calls=2 in=\\d+ (cached=\\d+ )?out=\\d+ ms=\\d+$`,
      ),
    );
    expect(lines[2]).toMatch(/^POST \/v1\/chat\/completions 401 ms=\d+ error="a workmem serve token is required"$/);
    expect(lines[3]).toMatch(/^POST \/v1\/chat\/completions 502 session=\w{8} how=header ms=\d+ error=".*could not be reached.*"$/);
    expect(lines.join('\n')).not.toMatch(/rose1|plant1|hello/);
    expect(lines.join('\n')).not.toContain(UPSTREAM_KEY);
  });

  it('says a port in use in its own words', async () => {
    const { proxy } = await proxied();
    const taken = proxied({ proxy: { port: proxy.port } });
    await expect(taken).rejects.toThrow(new RegExp(`port ${proxy.port} on 127.0.0.1 is in use .*--port`));
  });

  it('keeps the upstream key out of the log, the trace and the errors, from the environment or forwarded', async () => {
    for (const forwardAuth of [false, true]) {
      const { proxy, home, server } = await proxied({
        server: { apiKey: UPSTREAM_KEY },
        proxy: forwardAuth ? { forwardAuth: true } : { apiKey: UPSTREAM_KEY },
      });
      const headers = {
        'x-workmem-session': 'keyed',
        ...(forwardAuth ? { authorization: `Bearer ${UPSTREAM_KEY}`, 'x-workmem-token': proxy.token } : {}),
      };
      const said = await raw(proxy, { body: chat(`My key is ${UPSTREAM_KEY}, keep it.`), headers });
      expect(said.status).toBe(200);
      server.inject({ type: 'server_error', message: `upstream broke with key ${UPSTREAM_KEY}` });
      const failed = await raw(proxy, { body: chat('again'), headers });
      expect(failed.status).toBe(500);
      expect(failed.body).not.toContain(UPSTREAM_KEY);
      const state = await sessionState(sessionIdFor('keyed'), { home });
      const everything = JSON.stringify(state.log) + state.trace.join('\n') + JSON.stringify(state.meta);
      expect(everything).toContain('My key is');
      expect(everything).not.toContain(UPSTREAM_KEY);
    }
  });
});
