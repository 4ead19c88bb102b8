/**
 * A server's idle sockets outlive the keep-alive it advertises, so that a client reusing one
 * at the advertised end (late, on a loaded machine) is not reset.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ADVERTISED_KEEP_ALIVE_S, KEEP_ALIVE_MS, advertiseKeepAlive, keepAliveAhead } from '../../src/http/keepAlive.js';
import { startProxy } from '../../src/serve/proxyServer.js';
import { protocolFollower } from '../../src/testing/protocolFollower.js';
import { startTestServer } from '../../src/testing/testServer.js';
import { tempHome } from '../tempHomes.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** The head of the answer to one raw request. */
async function head(port: number, request: string): Promise<string[]> {
  const socket = connect(port, '127.0.0.1');
  socket.write(request);
  let text = '';
  for await (const chunk of socket) {
    text += String(chunk);
    if (text.includes('\r\n\r\n')) break;
  }
  socket.destroy();
  return text.split('\r\n\r\n')[0]!.split('\r\n');
}

async function listening(s: Server): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
}

describe('keep-alive ahead of what is advertised', () => {
  it('advertises one Keep-Alive line, well under how long the socket is kept; none when the client closes', async () => {
    server = createServer((req, res) => {
      advertiseKeepAlive(req, res);
      res.end('ok');
    });
    keepAliveAhead(server);
    const port = await listening(server);
    const kept = await head(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(kept.filter((l) => /^keep-alive:/i.test(l))).toEqual([`Keep-Alive: timeout=${ADVERTISED_KEEP_ALIVE_S}`]);
    expect(kept).toContain('Connection: keep-alive');
    expect(KEEP_ALIVE_MS).toBeGreaterThanOrEqual(ADVERTISED_KEEP_ALIVE_S * 1000 + 10_000);
    expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_MS);
    const closing = await head(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(closing.filter((l) => /^keep-alive:/i.test(l))).toEqual([]);
    expect(closing).toContain('Connection: close');
  });

  it('holds for workmem serve and the test server', async () => {
    const upstream = await startTestServer({ policy: protocolFollower() });
    const proxy = await startProxy({ upstream: upstream.baseURL, home: tempHome(), cwd: '/work/proxied', env: {} });
    try {
      for (const url of [`${proxy.url}/models`, `${upstream.baseURL}/models`]) {
        const answer = await fetch(url, { headers: { authorization: `Bearer ${proxy.token}` } });
        await answer.text();
        expect(answer.headers.get('keep-alive'), url).toBe(`timeout=${ADVERTISED_KEEP_ALIVE_S}`);
      }
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });
});
