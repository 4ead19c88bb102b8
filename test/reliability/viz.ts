/**
 * The visualizer's doors, as another web page, a DNS-rebinding site, another local user
 * or a squatter on the inspect port would try them: a foreign Host or Origin, no token or
 * a wrong one, traversal in every route, forged ingest messages, a listener that is not
 * the user's server. **lost** counts requests that read a byte of a session, forged
 * records that reached a page, and session data a squatter received. (The same attacks
 * from a real browser page are in test/viz/visualizer.browser.test.ts.)
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { LiveLink } from '../../src/trace/liveLink.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { createSession } from '../../src/session/index.js';
import { startVizServer, type VizServer } from '../../src/viz/vizServer.js';
import { auth, rawGet, until, upgradeHeaders, wsAttempt } from '../viz/vizProbes.js';
import { Tally, type FamilyResult } from './report.js';

const SECRET = 'the-private-question-7f3a';

export async function vizCases(): Promise<FamilyResult> {
  const tally = new Tally('viz');
  const home = mkdtempSync(join(tmpdir(), 'workmem-viz-'));
  let server: VizServer | null = null;
  try {
    const session = await createSession({ llm: scriptedModel([{ text: 'ok' }]), home, cwd: '/work/p', env: {} });
    await session.prompt(SECRET);
    await session.close();
    const id = session.id;
    server = await startVizServer({ home });
    const { port, token } = server;
    const leaks = (body: string): number => (body.includes(id.slice(0, 8)) || body.includes(SECRET) ? 1 : 0);
    const routes = ['/', '/app.js', '/api/sessions', '/api/charts', `/api/sessions/${id}/trace`, `/api/sessions/${id.slice(0, 8)}/trace`];

    for (const host of [
      `attacker.example:${port}`,
      'attacker.example',
      `localhost.attacker.example:${port}`,
      `127.0.0.1:${port + 1}`,
      `0.0.0.0:${port}`,
    ]) {
      for (const path of routes) {
        const res = await rawGet(port, path, { host, ...auth(token) });
        tally.add('foreign Host (DNS rebinding)', {
          survived: res.status === 421,
          lost: leaks(res.body),
          detail: `${host} ${path}: ${res.status}`,
        });
      }
      for (const path of ['/live', '/ingest']) {
        const ws = await wsAttempt(`ws://127.0.0.1:${port}${path}`, { headers: { host }, protocols: ['workmem', `token.${token}`] });
        tally.add('foreign Host (DNS rebinding)', { survived: !ws.opened, lost: ws.messages.length, detail: `${host} ${path}` });
      }
    }

    for (const origin of [
      'http://evil.example',
      `http://127.0.0.1:${port + 1}`,
      'null',
      `https://localhost:${port}`,
      `http://127.0.0.1:${port}.evil.example`,
    ]) {
      for (const path of routes) {
        const res = await rawGet(port, path, { origin, ...auth(token) });
        tally.add('foreign Origin', { survived: res.status === 403, lost: leaks(res.body), detail: `${origin} ${path}: ${res.status}` });
      }
      for (const path of ['/live', '/ingest']) {
        const ws = await wsAttempt(`ws://127.0.0.1:${port}${path}`, { headers: { origin }, protocols: ['workmem', `token.${token}`] });
        tally.add('foreign Origin', { survived: !ws.opened, lost: ws.messages.length, detail: `${origin} ${path}` });
      }
    }

    const wrong = Buffer.alloc(32, 1).toString('base64url');
    for (const headers of [{}, auth(wrong), auth(token.slice(1)), auth(`${token}x`), { authorization: `Basic ${token}` }]) {
      for (const path of routes.filter((r) => r.startsWith('/api/'))) {
        const res = await rawGet(port, path, headers);
        tally.add('no or wrong token', {
          survived: res.status === 401,
          lost: leaks(res.body),
          detail: `${JSON.stringify(headers)} ${path}: ${res.status}`,
        });
      }
    }
    for (const protocols of [[], ['workmem'], ['workmem', `token.${wrong}`], ['workmem', `proof.${'A'.repeat(22)}.${wrong}`]]) {
      for (const path of ['/live', '/ingest']) {
        const ws = await wsAttempt(`ws://127.0.0.1:${port}${path}`, { protocols, send: [{ type: 'hello', sessionId: id }] });
        tally.add('no or wrong token', {
          survived: ws.status === 401,
          lost: ws.messages.length,
          detail: `${protocols.join(',')} ${path}: ${ws.status}`,
        });
      }
    }

    const traversals = [
      '/../package.json',
      '/%2e%2e/package.json',
      '/.%2E/package.json',
      '/%2e%2e%2fpackage.json',
      '/..%5cpackage.json',
      '/\\..\\package.json',
      '//etc/passwd',
      '/app.js/../api/sessions',
      '/api/./sessions',
      `/api/sessions/${id}/../../sessions`,
      `/api/sessions/..%2f${id}/trace`,
      `/api/sessions/${id}%2f..%2fmeta.json/trace`,
      '/api/sessions/%2fetc%2fpasswd/trace',
      `/api/sessions/${id}%5cmeta.json/trace`,
      `http://127.0.0.1:${port}/api/sessions`,
    ];
    for (const path of traversals) {
      const res = await rawGet(port, path, auth(token));
      tally.add('path traversal', { survived: res.status === 400, lost: leaks(res.body), detail: `${path}: ${res.status}` });
    }
    for (const path of ['/live/..', '/x/../live', '/%2e%2e/ingest', '/ingest%2f..', '/api/../live']) {
      const res = await rawGet(port, path, upgradeHeaders(token));
      tally.add('path traversal', { survived: res.status === 400, detail: `upgrade ${path}: ${res.status}` });
    }

    // Forged ingest messages from a proven client reach no page.
    const page = new WebSocket(`ws://127.0.0.1:${port}/live`, ['workmem', `token.${token}`]);
    const shown: string[] = [];
    page.on('message', (d) => shown.push(String(d)));
    await new Promise((r) => page.once('open', r));
    const evil = '<img src=x onerror=alert(1)>';
    const forged: unknown[] = [
      { k: 'step', ts: 1, machine: 'turn', event: 'x', transitions: [], from: [], to: [], value: 'done', turn: evil, request: null },
      { k: 'event', ts: 1, event: { type: 'prompt_built', turn: 1, request: 1, mode: evil, messages: 1, range: [0, 1], tokens: {} } },
      { k: 'event', ts: 1, event: { type: 'reminder', turn: 1, request: 1, level: evil, reason: 'rounds', rounds: 1, tokensPercent: 1 } },
      { k: 'event', ts: 1, event: { type: 'made_up' } },
      { k: 'memory', ts: 1, version: -1, content: 'x', turn: null },
      { k: 'header', format: 1, sessionId: '../../x', ts: 1, resumed: false },
      { k: 'step', ts: Number.NaN, machine: 'turn' },
      [],
      'text',
    ];
    const link = new LiveLink(`ws://127.0.0.1:${port}/ingest`, '0b0e6c3a-1d2f-4a5b-8c9d-0e1f2a3b4c5d', () => {}, home);
    const before = server.stats().dropped;
    for (const record of forged) link.send(record as never);
    const finished = await until(() => server!.stats().dropped >= before + forged.length).then(
      () => true,
      () => false,
    );
    link.close();
    await new Promise((r) => setTimeout(r, 100));
    const reached = shown.filter((m) => m.includes('"record"')).length;
    for (const record of forged)
      tally.add('forged ingest record (schema)', {
        survived: finished,
        lost: reached ? 1 : 0,
        detail: `${JSON.stringify(record)}; ${reached} reached a page`,
      });
    page.close();

    // The token file: the user's alone.
    const file = join(home, 'viz', `${port}.json`);
    const mode = (path: string): string => {
      try {
        return (statSync(path).mode & 0o777).toString(8);
      } catch {
        return 'missing';
      }
    };
    const modes = `${mode(join(home, 'viz'))}/${mode(file)}`;
    tally.add('token file permissions', { survived: modes === '700/600', detail: `viz/ and its file: ${modes}` });

    for (const stale of [false, true]) tally.add('squatter on the inspect port', await squat(stale ? token : null));
  } finally {
    await server?.close();
    rmSync(home, { recursive: true, force: true });
  }
  return tally.result();
}

/** A session streams to a port held by someone else's listener; with `token`, a stale token file of ours names the port. */
async function squat(token: string | null): Promise<{ survived: boolean; lost: number; detail: string }> {
  const home = mkdtempSync(join(tmpdir(), 'workmem-squat-'));
  const received: string[] = [];
  const squatter = createServer((req, res) => {
    received.push(`${req.url} ${JSON.stringify(req.headers)}`);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ proof: 'A'.repeat(43), nonce: 'A'.repeat(22) }));
  });
  const wss = new WebSocketServer({ server: squatter, handleProtocols: (p) => [...p][0] ?? false });
  wss.on('connection', (ws) => ws.on('message', (d) => received.push(String(d))));
  squatter.listen(0, '127.0.0.1');
  await new Promise((r) => squatter.once('listening', r));
  const port = (squatter.address() as AddressInfo).port;
  try {
    if (token) {
      mkdirSync(join(home, 'viz'), { mode: 0o700 });
      writeFileSync(join(home, 'viz', `${port}.json`), JSON.stringify({ port, token, pid: 1 }), { mode: 0o600 });
    }
    const warnings: string[] = [];
    const session = await createSession({
      llm: scriptedModel([{ text: 'answer' }]),
      home,
      cwd: '/work/p',
      env: {},
      visualizer: port,
      warn: (m) => warnings.push(m),
    });
    await until(() => warnings.length > 0).catch(() => {});
    const result = await session.prompt(SECRET);
    await new Promise((r) => setTimeout(r, 200));
    await session.close();
    const all = received.join('\n');
    const lost = all.includes(session.id) || all.includes(SECRET) || (token !== null && all.includes(token)) ? 1 : 0;
    return {
      survived: result.status === 'done' && warnings.length === 1,
      lost,
      detail: `stale token file: ${token !== null}; warnings ${JSON.stringify(warnings)}; the squatter received ${received.length} messages`,
    };
  } finally {
    wss.close();
    await new Promise((r) => squatter.close(r));
    rmSync(home, { recursive: true, force: true });
  }
}
