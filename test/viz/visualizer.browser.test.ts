/// <reference lib="dom" />
/**
 * The visualizer: the statechart drawn from the machines, the trace, and the page in a
 * real headless Chromium (playwright-core, /usr/bin/chromium) on a recorded demo session
 * and on a session running live. Screenshots go to test/artifacts/ (not committed).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Browser, Page } from 'playwright-core';
import WebSocket, { WebSocketServer } from 'ws';
import { createMachine } from 'xstate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnMachine } from '../../machines/turnMachine.js';
import { runDemo } from '../../src/cli/demo.js';
import type { CliIO } from '../../src/cli/cliIO.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { LLMError } from '../../src/llm/llm.js';
import { LiveLink } from '../../src/trace/liveLink.js';
import { redactor } from '../../src/secrets/redact.js';
import { openSession } from '../../src/session/index.js';
import { chartOf, renderSvg, toDot } from '../../src/viz/statechart.js';
import { readTrace, startVizServer, type VizServer } from '../../src/viz/vizServer.js';
import type { TraceRecord } from '../../src/trace/traceRecorder.js';
import type { WorkmemEvent } from '../../src/events.js';
import { cliPath } from '../cli/cliProcess.js';
import { protocolFollower, startTestServer, type RecordedRequest } from '../../src/testing/index.js';
import { collect, newSession, ofType, tempHome } from '../helpers.js';
import { sentFromTrace } from './traceRequests.js';
import { auth, launchChromium, rawGet, until, upgradeHeaders, wsAttempt } from './vizProbes.js';

const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

describe('the statechart comes from the machine definitions', () => {
  it('every state and transition of the turn machine is in the diagram, with stable ids', async () => {
    const model = chartOf(turnMachine);
    const svg = await renderSvg(toDot(model));
    for (const s of model.states.filter((s) => s.parent !== null)) expect(svg).toContain(`id="state:${s.id}"`);
    // A transition is an edge of its own, or (a loop on a state with several) a class of the one loop edge.
    const classes = [...svg.matchAll(/<g id="t:[^"]*" class="edge([^"]*)"/g)].flatMap((m) => m[1]!.trim().split(' '));
    for (const t of model.transitions) expect(svg.includes(`id="t:${t.id}`) || classes.includes(`t:${t.id}`), t.id).toBe(true);
    expect(model.transitions.find((t) => t.source === 'turn.maybeCompact' && t.guard === 'overThreshold')?.label).toBe('always');
    expect(model.states.find((s) => s.id === 'turn.stream')?.invokes).toEqual(['llm']);
  });

  it('adding a state to a machine adds it to the diagram, with no other edit', async () => {
    const config = turnMachine.config as { states: Record<string, unknown> };
    const extended = createMachine({ ...config, states: { ...config.states, reviewing: { on: { APPROVE: 'done' } } } } as never);
    const before = toDot(chartOf(turnMachine));
    const after = toDot(chartOf(extended));
    expect(before).not.toContain('turn.reviewing');
    expect(after).toContain('"turn.reviewing" [id="state:turn.reviewing"');
    expect(after).toMatch(/"turn\.reviewing" -> "turn\.done" \[id="t:turn\.reviewing\|APPROVE\|0", label="APPROVE"/);
    expect(await renderSvg(after)).toContain('id="state:turn.reviewing"');
  });
});

describe('traces', () => {
  it('a missing, damaged or older trace is reported plainly, and what can be read is kept', () => {
    const home = tempHome();
    expect(readTrace(join(home, 'nope.jsonl'))).toEqual({ records: [], problems: [expect.stringMatching(/no trace\.jsonl/)] });
    const path = join(home, 'trace.jsonl');
    writeFileSync(
      path,
      [
        '{"k":"header","format":0,"sessionId":"x","ts":1,"resumed":false}',
        '{"k":"step","ts":2,"machine":"turn"',
        '{"k":"event","ts":3,"event":{"type":"turn_end"}}',
        '',
      ].join('\n'),
    );
    const { records, problems } = readTrace(path);
    expect(records.map((r) => r.k)).toEqual(['header', 'event']);
    expect(problems).toEqual([
      expect.stringMatching(/trace format 0 \(this visualizer reads format 1\)/),
      'line 2 of trace.jsonl is damaged and was skipped',
    ]);
  });
  it('each request is traced as sent, every message body once, and a secret stays masked', async () => {
    const home = tempHome();
    const llm = scriptedModel([
      {
        toolCalls: [
          {
            name: 'write',
            arguments: { path: 'working-memory/overview.md', content: '# Working Memory\n\n- key: sk-abcdefghijklmnopqrstuvwxyz0123\n' },
          },
        ],
      },
      { text: 'noted' },
      { text: 'again' },
    ]);
    const session = await newSession({ llm, home });
    await session.prompt('remember my key sk-abcdefghijklmnopqrstuvwxyz0123 please');
    await session.prompt('and now?');
    await session.close();
    const text = readFileSync(join(session.dir, 'trace.jsonl'), 'utf8');
    expect(text).not.toContain('sk-abcdefghijklmnopqrstuvwxyz0123');
    const records = readTrace(join(session.dir, 'trace.jsonl')).records;
    const sent = sentFromTrace(records);
    expect(sent).toHaveLength(llm.requests.length);
    // Exactly what the model received, with the key masked as every trace line masks it.
    const masked = (m: unknown) => JSON.parse(redactor([])(JSON.stringify(m))) as unknown;
    expect(JSON.stringify(llm.requests[0]!.messages)).toContain('sk-abcdefghijklmnopqrstuvwxyz0123');
    sent.forEach((s, i) => expect(s.messages, `request ${i + 1}`).toEqual(masked(llm.requests[i]!.messages)));
    const built = records.flatMap((r) => (r.k === 'event' && r.event.type === 'prompt_built' ? [r.event] : []));
    sent.forEach((s, i) => expect(s.tokens.reduce((a, b) => a + b, 0)).toBe(built[i]!.tokens.total - built[i]!.tokens.calibration));
    // Each body once: the first user message is carried by every request but traced once.
    expect(records.filter((r) => r.k === 'message' && r.seq === 1)).toHaveLength(1);
    expect(records.filter((r) => r.k === 'system').length).toBeLessThan(sent.length);
  });
  it("with memoryPosition 'after-history' each request is traced as sent too: the memory block once per version, before the last message", async () => {
    const home = tempHome();
    const llm = scriptedModel([
      { text: 'first' },
      { toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content: '# Working Memory\n\n- roses\n' } }] },
      { text: 'noted' },
      { text: 'again' },
    ]);
    const session = await newSession({ llm, home, settings: { memoryPosition: 'after-history', historyMode: 'phase1' } });
    for (const q of ['hello', 'remember roses', 'and now?']) await session.prompt(q);
    await session.close();
    const records = readTrace(join(session.dir, 'trace.jsonl')).records;
    const sent = sentFromTrace(records);
    expect(sent.map((s) => s.messages)).toEqual(llm.requests.map((r) => r.messages));
    const built = records.flatMap((r) => (r.k === 'event' && r.event.type === 'prompt_built' ? [r.event] : []));
    sent.forEach((s, i) => expect(s.tokens.reduce((a, b) => a + b, 0)).toBe(built[i]!.tokens.total - built[i]!.tokens.calibration));
    // One system record per memory version (two here), each with the memory block it put before the last message.
    const systems = records.filter((r) => r.k === 'system');
    expect(systems).toHaveLength(2);
    expect(new Set(systems.map((r) => (r as Extract<TraceRecord, { k: 'system' }>).content)).size).toBe(1);
    for (const r of systems) expect((r as Extract<TraceRecord, { k: 'system' }>).memory).toMatch(/^<working_memory file=/);
  });

  it('pinned messages are traced as sent, those before the window too, each body once and marked pinned', async () => {
    const home = tempHome();
    const llm = scriptedModel(() => ({ text: `Noted. ${'Roses want sun. '.repeat(12)}` }));
    const session = await newSession({
      llm,
      home,
      pinned: ['Rules: be brief.'],
      settings: { historyMode: 'phase2', recentTurns: 1, recentTurnsStep: 1 },
    });
    await session.prompt('Task: plan a rose bed.', { pin: true });
    for (const q of ['Where?', 'When?', 'How deep?', 'How far apart?']) await session.prompt(q);
    await session.close();
    const records = readTrace(join(session.dir, 'trace.jsonl')).records;
    const sent = sentFromTrace(records);
    expect(sent.map((s) => s.messages)).toEqual(llm.requests.map((r) => r.messages));
    const built = records.flatMap((r) => (r.k === 'event' && r.event.type === 'prompt_built' ? [r.event] : []));
    sent.forEach((s, i) => expect(s.tokens.reduce((a, b) => a + b, 0)).toBe(built[i]!.tokens.total - built[i]!.tokens.calibration));
    // The last requests send both pins before the window; each body is traced once, marked pinned.
    expect(
      llm.requests
        .at(-1)!
        .messages.slice(1, 3)
        .map((m) => m.content),
    ).toEqual(['Rules: be brief.', 'Task: plan a rose bed.']);
    expect(built.at(-1)!.pinned).toEqual([0, 1]);
    const pinnedBodies = records.filter((r) => r.k === 'message' && r.pinned);
    expect(pinnedBodies.map((r) => (r as Extract<TraceRecord, { k: 'message' }>).seq)).toEqual([1, 2]);
    expect(records.filter((r) => r.k === 'message' && r.seq === 1)).toHaveLength(1);
  });
  it("with memoryPosition 'by-phase' the trace follows the memory from the last message (phase 1) into the system message (phase 2)", async () => {
    const home = tempHome();
    const overview =
      '# Working Memory\n\n## Current task\nPlan the rose bed on the north side.\n\n## Decisions\n- Climbing roses by the wall, David Austin varieties.\n- Mulch in spring.\n';
    const llm = scriptedModel([
      { text: 'first' },
      { toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content: overview } }] },
      { text: 'noted' },
      { text: 'again' },
      { text: 'and again' },
    ]);
    const session = await newSession({ llm, home, settings: { memoryPosition: 'by-phase' } });
    const events = collect(session);
    for (const q of ['hello', 'remember the roses', 'and now?', 'one more']) await session.prompt(q);
    await session.close();
    const modes = ofType(events, 'prompt_built').map((e) => e.mode);
    expect(modes[0]).toBe('phase1');
    expect(modes.at(-1)).toBe('phase2');
    const records = readTrace(join(session.dir, 'trace.jsonl')).records;
    const sent = sentFromTrace(records);
    expect(sent.map((s) => s.messages)).toEqual(llm.requests.map((r) => r.messages));
    const built = records.flatMap((r) => (r.k === 'event' && r.event.type === 'prompt_built' ? [r.event] : []));
    sent.forEach((s, i) => expect(s.tokens.reduce((a, b) => a + b, 0)).toBe(built[i]!.tokens.total - built[i]!.tokens.calibration));
    // Phase 1 requests open their last message with the memory; phase 2 requests carry it in the system message.
    llm.requests.forEach((r, i) => {
      const system = String(r.messages[0]!.content);
      expect(system.includes('<working_memory file='), `request ${i}`).toBe(modes[i] !== 'phase1');
    });
  });

  it('a request built again after an overflow is traced again, as sent the second time', async () => {
    const home = tempHome();
    const llm = scriptedModel([{ error: new LLMError('overflow', 'context_length_exceeded') }, { text: 'fits now' }]);
    const session = await newSession({ llm, home });
    await session.prompt('a long question');
    await session.close();
    const records = readTrace(join(session.dir, 'trace.jsonl')).records;
    const built = records.filter((r) => r.k === 'event' && r.event.type === 'prompt_built');
    expect(llm.requests).toHaveLength(2);
    expect(built).toHaveLength(2);
    const sent = sentFromTrace(records);
    expect(sent.map((s) => s.messages)).toEqual(llm.requests.map((r) => r.messages));
  });
});

describe('the viz server', () => {
  it('refuses a port in use with a clear message and answers unknown sessions with 404', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => busy.once('listening', r));
    const port = (busy.address() as { port: number }).port;
    await expect(startVizServer({ home: tempHome(), port })).rejects.toThrow(
      `port ${port} is in use (another workmem viz?); choose another with --port`,
    );
    busy.close();
    const server = await startVizServer({ home: tempHome() });
    const response = await fetch(`${server.url}/api/sessions/deadbeef/trace`, { headers: auth(server.token) });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: expect.stringMatching(/no session with id deadbeef/) });
    for (const asset of ['/', '/app.js', '/style.css']) expect((await fetch(server.url + asset)).status).toBe(200);
    await server.close();
  });
});

describe("the viz server's doors", () => {
  let home: string;
  let server: VizServer;
  let sessionId: string;
  beforeAll(async () => {
    home = tempHome();
    const session = await newSession({ llm: scriptedModel([{ text: 'ok' }]), home });
    sessionId = session.id;
    await session.prompt('a secret plan');
    await session.close();
    server = await startVizServer({ home });
  });
  afterAll(() => server?.close());

  it('a per-run token of at least 128 bits, in a 0600 file of a 0700 folder of the home, removed on close', async () => {
    expect(server.token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(Buffer.from(server.token, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(server.pageUrl).toBe(`${server.url}/#token=${server.token}`);
    const file = join(home, 'viz', `${server.port}.json`);
    expect(statSync(join(home, 'viz')).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ port: server.port, token: server.token, pid: process.pid });
    const other = await startVizServer({ home });
    expect(other.token).not.toBe(server.token);
    const otherFile = join(home, 'viz', `${other.port}.json`);
    expect(existsSync(otherFile)).toBe(true);
    await other.close();
    expect(existsSync(otherFile)).toBe(false);
  });

  it('a rebinding Host header is refused on every route, the WebSocket ones too, token or not', async () => {
    const hosts = [
      `attacker.example:${server.port}`,
      'attacker.example',
      `127.0.0.1:${server.port + 1}`,
      `localhost.attacker.example:${server.port}`,
      `127.0.0.1.nip.io:${server.port}`,
    ];
    for (const host of hosts) {
      for (const path of ['/', '/app.js', '/api/sessions', `/api/sessions/${sessionId}/trace`, '/api/charts']) {
        const res = await rawGet(server.port, path, { host, ...auth(server.token) });
        expect([403, 421], `${host} ${path}`).toContain(res.status);
        expect(res.body).not.toContain(sessionId);
        expect(res.body).not.toContain('secret plan');
      }
      for (const path of ['/live', '/ingest']) {
        const ws = await wsAttempt(`ws://127.0.0.1:${server.port}${path}`, {
          headers: { host },
          protocols: ['workmem', `token.${server.token}`],
        });
        expect(ws.opened, `${host} ${path}`).toBe(false);
        expect([403, 421]).toContain(ws.status);
      }
    }
    // Our own names for the host pass.
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `LOCALHOST:${server.port}`, `[::1]:${server.port}`])
      expect((await rawGet(server.port, '/api/sessions', { host, ...auth(server.token) })).status, host).toBe(200);
  });

  it('a foreign Origin is refused on every route; a WebSocket with no Origin needs the token', async () => {
    for (const origin of ['http://evil.example', `http://127.0.0.1:${server.port + 1}`, 'null', `https://127.0.0.1:${server.port}`]) {
      for (const path of ['/api/sessions', '/app.js']) {
        const res = await rawGet(server.port, path, { origin, ...auth(server.token) });
        expect(res.status, `${origin} ${path}`).toBe(403);
        expect(res.body).not.toContain(sessionId);
      }
      for (const path of ['/live', '/ingest']) {
        const ws = await wsAttempt(`ws://127.0.0.1:${server.port}${path}`, {
          headers: { origin },
          protocols: ['workmem', `token.${server.token}`],
        });
        expect(ws.opened).toBe(false);
        expect(ws.status).toBe(403);
      }
    }
    for (const origin of [`http://127.0.0.1:${server.port}`, `http://localhost:${server.port}`]) {
      expect((await rawGet(server.port, '/api/sessions', { origin, ...auth(server.token) })).status).toBe(200);
    }
    const noOrigin = await wsAttempt(`ws://127.0.0.1:${server.port}/live`, { protocols: ['workmem', `token.${server.token}`] });
    expect(noOrigin.opened).toBe(true);
  });

  it('no token or a wrong one: 401 on every API and WebSocket route, and not a byte of session data', async () => {
    const wrong = Buffer.alloc(32, 7).toString('base64url');
    const api = [
      '/api/sessions',
      '/api/charts',
      `/api/sessions/${sessionId}/trace`,
      `/api/sessions/${sessionId.slice(0, 8)}/trace`,
      `/api/sessions/${sessionId}/live`,
      `/api/sessions/${sessionId}/memory-file?path=detail/x.md`,
    ];
    for (const headers of [{}, auth(wrong), auth(''), auth(server.token.slice(0, -1)), { authorization: server.token }]) {
      for (const path of api) {
        const res = await rawGet(server.port, path, headers);
        expect(res.status, `${JSON.stringify(headers)} ${path}`).toBe(401);
        expect(res.body).not.toContain(sessionId.slice(0, 8));
        expect(res.body).not.toContain('secret plan');
      }
    }
    // A token in the query string is not accepted either (it would land in logs and Referer).
    expect((await rawGet(server.port, `/api/sessions?token=${server.token}`)).status).toBe(401);
    for (const path of ['/live', '/ingest']) {
      for (const protocols of [[], ['workmem'], ['workmem', `token.${wrong}`], ['workmem', 'proof.abc.def']]) {
        const ws = await wsAttempt(`ws://127.0.0.1:${server.port}${path}`, {
          protocols,
          send: [{ type: 'hello', sessionId }],
        });
        expect(ws.opened, `${path} ${protocols.join(',')}`).toBe(false);
        expect(ws.status).toBe(401);
        expect(ws.messages).toEqual([]);
      }
    }
    expect(server.stats().ingested).toBe(0);
    // With the token, the same routes answer (the detail file does not exist: 404, said plainly).
    for (const path of api)
      expect((await rawGet(server.port, path, auth(server.token))).status, path).toBe(path.includes('memory-file') ? 404 : 200);
  });

  it('traversal is refused in every route, encoded or not, token or not', async () => {
    const attempts = [
      '/../package.json',
      '/api/../app.js',
      '/%2e%2e/package.json',
      '/%2E%2E%2fpackage.json',
      '/app.js/..%2f..%2fpackage.json',
      '/..%5cpackage.json',
      '/\\..\\package.json',
      '//etc/passwd',
      '/api/sessions/../../api/sessions',
      `/api/sessions/${sessionId}/../../sessions`,
      `/api/sessions/..%2f${sessionId}/trace`,
      `/api/sessions/%2e%2e/trace`,
      `/api/sessions/${sessionId}%2f..%2f..%2fmeta.json/trace`,
      `/api/sessions/%2fetc%2fpasswd/trace`,
      `/api/sessions/${sessionId}%5c..%5cmeta.json/trace`,
      '/ingest/../api/sessions',
      '/live/%2e%2e/api/sessions',
    ];
    for (const path of attempts) {
      const res = await rawGet(server.port, path, auth(server.token));
      expect(res.status, path).toBe(400);
      expect(res.body).not.toContain(sessionId.slice(0, 8));
      expect(res.body).not.toContain('"name"');
    }
    // The context view's archive links open only detail/ and archive/ files of the working memory.
    for (const file of [
      '../meta.json',
      'detail/../../meta.json',
      '/etc/passwd',
      'overview.md',
      'detail/..',
      'working-memory/../messages.jsonl',
      '',
    ]) {
      const res = await rawGet(server.port, `/api/sessions/${sessionId}/memory-file?path=${encodeURIComponent(file)}`, auth(server.token));
      expect(res.status, file).toBe(400);
      expect(res.body).not.toContain('secret plan');
    }
    expect((await rawGet(server.port, `/api/sessions/${sessionId}/memory-file?path=detail/none.md`, auth(server.token))).status).toBe(404);
    // An absolute-form target is refused too.
    expect((await rawGet(server.port, `http://127.0.0.1:${server.port}/api/sessions`, auth(server.token))).status).toBe(400);
    // WebSocket upgrades, sent raw (a WebSocket client would normalise the path first).
    const upgrade = upgradeHeaders(server.token);
    expect((await rawGet(server.port, '/live', upgrade)).status).toBe(101);
    for (const path of ['/live/..', '/x/../live', '/%2e%2e/ingest', '/ingest%2f..', '/api/../live', '/live/./']) {
      expect((await rawGet(server.port, path, upgrade)).status, path).toBe(400);
    }
  });

  it('the page is served with a strict Content-Security-Policy, nosniff and no referrer', async () => {
    for (const path of ['/', '/app.js', '/style.css', '/api/sessions']) {
      const res = await rawGet(server.port, path, auth(server.token));
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
      expect(res.headers['referrer-policy'], path).toBe('no-referrer');
    }
    const csp = (await rawGet(server.port, '/')).headers['content-security-policy'];
    expect(csp).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it('a link closed before its handshake finishes still delivers what it queued (a short run shows live)', async () => {
    const id = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
    const server = await startVizServer({ home }); // its own: the other cases count what their server ingested
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/live`, ['workmem', `token.${server.token}`]);
    const seen: { type: string; sessionId?: string; record?: TraceRecord }[] = [];
    page.on('message', (d) => seen.push(JSON.parse(String(d))));
    await new Promise((r) => page.once('open', r));
    const link = new LiveLink(`ws://127.0.0.1:${server.port}/ingest`, id, () => {}, home);
    const records: TraceRecord[] = [1, 2, 3].map((version) => ({ k: 'memory', ts: version, version, content: `# v${version}`, turn: 1 }));
    for (const record of records) link.send(record);
    await link.close(); // at once: the challenge has not been answered yet
    await until(() => seen.filter((m) => m.type === 'record').length === records.length);
    expect(seen.filter((m) => m.type === 'record').map((m) => m.record)).toEqual(records);
    page.close();
    await server.close();
  });

  it('ingest: the page gets records only from a proven session, and every message is checked against the schema', async () => {
    const id = '0b0e6c3a-1d2f-4a5b-8c9d-0e1f2a3b4c5d';
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/live`, ['workmem', `token.${server.token}`]);
    const seen: { type: string; sessionId?: string; record?: TraceRecord; sessions?: string[] }[] = [];
    page.on('message', (d) => seen.push(JSON.parse(String(d))));
    await new Promise((r) => page.once('open', r));
    const warnings: string[] = [];
    const link = new LiveLink(`ws://127.0.0.1:${server.port}/ingest`, id, (m) => warnings.push(m), home);
    const good: TraceRecord = { k: 'memory', ts: 1, version: 2, content: '# ok', turn: 1 };
    const forged = [
      {
        k: 'step',
        ts: 1,
        machine: 'turn',
        event: 'x',
        transitions: [],
        from: [],
        to: [],
        value: 'done',
        turn: '<img src=x onerror=alert(1)>',
        request: null,
      },
      {
        k: 'event',
        ts: 1,
        event: { type: 'prompt_built', turn: 1, request: 1, mode: '<script>alert(1)</script>', messages: 1, range: [0, 1], tokens: {} },
      },
      { k: 'event', ts: 1, event: { type: 'no_such_event' } },
      { k: 'header', format: 1, sessionId: '../../etc', ts: 1, resumed: false },
      { k: 'memory', ts: 1, version: 'x', content: 1, turn: null },
      { k: 'nope' },
      null,
    ];
    for (const record of forged) link.send(record as never);
    link.send(good);
    await until(() => seen.some((m) => m.type === 'record'));
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.filter((m) => m.type === 'record')).toEqual([{ type: 'record', sessionId: id, n: 0, record: good }]);
    expect(server.stats()).toMatchObject({ ingested: 1, dropped: forged.length });
    expect(warnings).toEqual([]);
    link.close();

    // A proven client with a bad session id, or bad JSON, is dropped too, and the server stays up.
    const bad = new LiveLink(`ws://127.0.0.1:${server.port}/ingest`, '../../not-an-id', () => {}, home);
    bad.send(good);
    await until(() => server.stats().dropped >= forged.length + 2);
    bad.close();
    expect(seen.filter((m) => m.type === 'record')).toHaveLength(1);
    expect(seen.flatMap((m) => m.sessions ?? [])).not.toContain('../../not-an-id');
    page.close();
    expect((await rawGet(server.port, '/api/sessions', auth(server.token))).status).toBe(200);
  });

  it('a squatter on the inspect port receives nothing of the session; the session warns once and goes on', async () => {
    for (const staleTokenFile of [false, true]) {
      const squatHome = tempHome();
      const received: string[] = [];
      const squatter = createHttpServer((req, res) => {
        received.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ proof: Buffer.alloc(32).toString('base64url'), nonce: 'AAAAAAAAAAAAAAAAAAAAAA', port: 0 }));
      });
      const wss = new WebSocketServer({ server: squatter, handleProtocols: (p) => [...p][0] ?? false });
      wss.on('connection', (ws, req) => {
        received.push(`upgrade ${req.url} ${JSON.stringify(req.headers)}`);
        ws.on('message', (d) => received.push(String(d)));
      });
      squatter.listen(0, '127.0.0.1');
      await new Promise((r) => squatter.once('listening', r));
      const port = (squatter.address() as AddressInfo).port;
      if (staleTokenFile) {
        // The user's own viz ran on this port earlier and left its token behind (a crash).
        mkdirSync(join(squatHome, 'viz'), { recursive: true, mode: 0o700 });
        writeFileSync(join(squatHome, 'viz', `${port}.json`), JSON.stringify({ port, token: server.token, pid: 1 }), { mode: 0o600 });
      }
      const warnings: string[] = [];
      const session = await newSession({
        llm: scriptedModel([{ text: 'the answer' }]),
        home: squatHome,
        visualizer: port,
        warn: (m) => warnings.push(m),
      });
      await until(() => warnings.length > 0);
      const result = await session.prompt('a private question');
      expect(result.status).toBe('done');
      await new Promise((r) => setTimeout(r, 300));
      await session.close();
      wss.close();
      await new Promise((r) => squatter.close(r));
      const all = received.join('\n');
      expect(all).not.toContain(session.id);
      expect(all).not.toContain('private question');
      expect(all).not.toContain('the answer');
      expect(all).not.toContain(server.token);
      expect(all).not.toMatch(/upgrade/);
      expect(warnings).toEqual([
        staleTokenFile
          ? `the listener on port ${port} is not the workmem viz you started (no valid proof); nothing sent`
          : `no workmem viz of yours is running on port ${port} (no token in ${join(squatHome, 'viz')}); nothing sent, still looking`,
      ]);
    }
  });
});

describe('workmem viz, the command', () => {
  it('round 3 new user: prints a URL with the token and the real port for --port 0, and says which home it reads and where its token is kept; the token opens the API, its absence does not', async () => {
    const home = tempHome();
    const child = spawn(process.execPath, [cliPath(), 'viz', '--port', '0', '--home', home], { env: { PATH: process.env.PATH } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.resume();
    try {
      await until(() => /http:\S+/.test(out));
      const url = new URL(/http:\S+/.exec(out)![0]);
      expect(url.hostname).toBe('127.0.0.1');
      expect(Number(url.port)).toBeGreaterThan(0);
      const token = /^#token=([A-Za-z0-9_-]{22,})$/.exec(url.hash)?.[1];
      expect(token).toBeDefined();
      expect((await fetch(url)).status).toBe(200);
      expect((await fetch(new URL('/api/sessions', url))).status).toBe(401);
      expect((await fetch(new URL('/api/sessions', url), { headers: auth(token!) })).status).toBe(200);
      expect(JSON.parse(readFileSync(join(home, 'viz', `${url.port}.json`), 'utf8')).token).toBe(token);
      // round 3 new user: it says which sessions it reads and where it writes its token.
      expect(out).toContain(`(the sessions of ${home};`);
      expect(out).toContain(`its token is kept in ${join(home, 'viz', `${url.port}.json`)} until it stops`);
      child.kill('SIGINT');
      await new Promise((r) => child.once('close', r));
      expect(existsSync(join(home, 'viz', `${url.port}.json`))).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

// Chromium is a prerequisite of the browser project (test/project/preflight.ts): never skipped.
describe('the page, in headless Chromium', () => {
  let browser: Browser;
  let server: VizServer;
  let home: string;
  let sessionId: string;
  let records: TraceRecord[];
  let received: RecordedRequest[];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    home = tempHome();
    const sink = new PassThrough().resume();
    const io = { stdin: process.stdin, stdout: sink, stderr: sink, env: {}, cwd: '/demo' } as unknown as CliIO;
    const demo = await runDemo(io, { quiet: true, home });
    sessionId = demo.sessionId;
    received = demo.requests;
    records = readTrace(join(demo.sessionDir, 'trace.jsonl')).records;
    server = await startVizServer({ home });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(query: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
    // Offline: any request that does not go to our own server is an error.
    await page.route('**/*', (route) =>
      route.request().url().startsWith(server.url)
        ? route.continue()
        : (errors.push(`external request: ${route.request().url()}`), route.abort()),
    );
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    await page.goto(`${server.url}/${query}#token=${server.token}`);
    await page.waitForSelector('#chart svg');
    return { page, errors };
  }

  const steps = () => records.filter((r): r is Extract<TraceRecord, { k: 'step' }> => r.k === 'step');
  const builtAtRecord = (r: TraceRecord) =>
    (r as Extract<TraceRecord, { k: 'event' }>).event as Extract<WorkmemEvent, { type: 'prompt_built' }>;

  it('renders every state of the turn machine, and replay moves the highlight to the expected state', async () => {
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    for (const s of chartOf(turnMachine).states.filter((s) => s.parent !== null)) {
      expect(await page.locator(`[id="state:${s.id}"]`).count(), s.id).toBe(1);
    }
    expect(await page.textContent('#position')).toBe(`${steps().length} / ${steps().length}`);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-last-step.png') });

    // Step to the first time the turn machine enters runTools, then one step on.
    const target = steps().findIndex((s) => s.machine === 'turn' && s.value === 'runTools');
    await page.focus('body');
    await page.keyboard.press('Home');
    expect(await page.textContent('#position')).toBe(`1 / ${steps().length}`);
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, target);
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe('state:turn.runTools');
    expect(await page.textContent('#step-event')).toBe('done: llm');
    expect(await page.locator('#chart .edge.last').getAttribute('id')).toBe('t:turn.stream|xstate.done.actor.llm|0');
    const next = steps().findIndex((s, i) => i > target && s.machine === 'turn');
    for (let i = target; i < next; i++) await page.keyboard.press('ArrowRight');
    const expected = steps()[next]!.value as string;
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe(`state:turn.${expected}`);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-replay.png') });

    // The other machines are drawn from their definitions too.
    await page.click('#machines button[data-machine="historyMode"]');
    expect(await page.locator('[id="state:historyMode.auto.phase2"]').count()).toBe(1);
    await page.keyboard.press('End');
    expect(await page.locator('#chart .node.active').getAttribute('id')).toBe('state:historyMode.auto.phase2');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the timeline has one point per request, with markers, and the memory panel shows the diff after a write', async () => {
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForSelector('#timeline .point');
    const requests = records.filter((r) => r.k === 'event' && r.event.type === 'prompt_built').length;
    expect(await page.locator('#timeline .point').count()).toBe(requests);
    expect(await page.locator('#timeline .marker.compaction').count()).toBe(1);
    expect(await page.locator('#timeline .marker.mode').count()).toBe(1);
    expect(await page.locator('#timeline .marker.reminder').count()).toBeGreaterThan(0);
    expect(await page.locator('#timeline .point').first().locator('title').textContent()).toMatch(
      /^request 1 \(turn 1, request 1, phase1\): [\d,]+ tokens, \d+ % of the window$/,
    );

    // Just after the first memory write: the new facts are marked as added.
    const firstWrite = records.findIndex((r) => r.k === 'memory' && r.version > 1);
    const stepAfter = records.slice(0, firstWrite).filter((r) => r.k === 'step').length;
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, stepAfter);
    const added = await page.locator('#memory .add').allTextContents();
    expect(added).toEqual(expect.arrayContaining(['+ - name: Ada', '+ - release deadline: June 30']));
    expect(await page.locator('#memory .del').count()).toBeGreaterThan(0);
    expect(await page.textContent('#memory-caption')).toMatch(/^version 2 of \d+/);
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-memory-diff.png') });
    expect(errors).toEqual([]);
    await page.close();
  });

  /** Replay to the step where the given prompt_built was recorded. */
  async function toRequest(page: Page, built: number): Promise<void> {
    const at = records.slice(0, records.indexOf(builtEvents()[built]!)).filter((r) => r.k === 'step').length - 1;
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, at);
    await page.waitForFunction((i) => document.querySelector('#context')?.getAttribute('data-request') === String(i), built);
  }
  /** A session of its own opened in the page (its trace has one request per model call); show(i) replays to its request i. */
  async function openReplay(session: { id: string; dir: string }, requests: number) {
    const own = readTrace(join(session.dir, 'trace.jsonl')).records;
    const built = own.filter((r) => r.k === 'event' && r.event.type === 'prompt_built');
    expect(built).toHaveLength(requests);
    const { page, errors } = await open(`?session=${session.id}`);
    await page.waitForSelector('#timeline .point');
    const show = async (i: number): Promise<void> => {
      const at = own.slice(0, own.indexOf(built[i]!)).filter((r) => r.k === 'step').length - 1;
      await page.locator('#slider').evaluate((el, v) => {
        (el as HTMLInputElement).value = String(v);
        el.dispatchEvent(new Event('input'));
      }, at);
      await page.waitForFunction((n) => document.querySelector('#context')?.getAttribute('data-request') === String(n), i);
    };
    return { page, errors, built, show };
  }
  const builtEvents = () => records.filter((r) => r.k === 'event' && r.event.type === 'prompt_built');
  const builtAt = (i: number) =>
    (builtEvents()[i] as Extract<TraceRecord, { k: 'event' }>).event as Extract<WorkmemEvent, { type: 'prompt_built' }>;

  it('the context view lists exactly the messages the server received, with the token figures of prompt_built', async () => {
    // The demo's model requests, in order (a summarising compaction would add its own: it sends no tools).
    const chat = received.filter((r) => r.path.endsWith('/chat/completions') && r.status === 200 && (r.body.tools?.length ?? 0) > 0);
    expect(chat).toHaveLength(builtEvents().length);
    const events = records.flatMap((r) => (r.k === 'event' ? [r.event] : []));
    const phase1 = builtEvents().findIndex((r) => builtAtRecord(r).mode === 'phase1' && builtAtRecord(r).request > 1);
    const phase2 = builtEvents().findIndex((r) => builtAtRecord(r).mode === 'phase2');
    const compaction = events.findIndex((e) => e.type === 'compaction_end' && e.replaced > 0);
    const afterCompaction = builtEvents().findIndex((r) => events.indexOf((r as Extract<TraceRecord, { k: 'event' }>).event) > compaction);
    expect([phase1, phase2, afterCompaction].every((i) => i >= 0)).toBe(true);
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForSelector('#timeline .point');
    for (const [name, i] of [
      ['phase 1', phase1],
      ['phase 2', phase2],
      ['after a compaction', afterCompaction],
    ] as const) {
      await toRequest(page, i);
      const shown = await page.evaluate(() => {
        const messages: { role: string; content: string; calls: string[] }[] = [];
        for (const part of Array.from(document.querySelectorAll<HTMLElement>('#context .part'))) {
          const m = Number(part.dataset.message);
          messages[m] ??= { role: part.dataset.role!, content: '', calls: [] };
          messages[m]!.content += part.querySelector('.body')!.textContent;
          for (const call of Array.from(part.querySelectorAll('.call'))) messages[m]!.calls.push(call.textContent!);
        }
        const tokens = (group: string) =>
          document.querySelector<HTMLElement>(`#context [data-group="${group}"] h3 .tokens`)?.dataset.tokens;
        const history = Array.from(document.querySelectorAll<HTMLElement>('#context [data-group="history"] .part > summary .tokens')).map(
          (t) => Number(t.dataset.tokens),
        );
        return {
          messages,
          system: tokens('system'),
          memory: tokens('memory'),
          index: tokens('index'),
          history: tokens('history'),
          tail: tokens('tail'),
          perMessage: history,
          caption: document.querySelector('#context-caption')!.textContent,
        };
      });
      const sent = chat[i]!.body.messages as {
        role: string;
        content: string | null;
        tool_calls?: { function: { name: string; arguments: string } }[];
      }[];
      expect(shown.messages.length, name).toBe(sent.length);
      shown.messages.forEach((m, k) => {
        const wire = sent[k]!;
        expect(m.role === 'tail' ? sent[k]!.role : m.role, `${name}: message ${k}`).toBe(wire.role);
        expect(m.content, `${name}: message ${k}`).toBe(wire.content ?? '');
        expect(m.calls, `${name}: message ${k}`).toEqual((wire.tool_calls ?? []).map((c) => `${c.function.name}(${c.function.arguments})`));
      });
      const t = builtAt(i).tokens;
      expect(Number(shown.system), name).toBe(t.system);
      expect(Number(shown.memory) + Number(shown.index), name).toBe(t.memory);
      expect(Number(shown.history), name).toBe(t.history);
      expect(
        shown.perMessage.reduce((a, b) => a + b, 0),
        name,
      ).toBe(t.history);
      expect(Number(shown.tail), name).toBe(t.tail);
      expect(shown.caption, name).toContain(`${t.total.toLocaleString('en-US')} tokens (${t.percent} %)`);
      if (name === 'after a compaction') {
        const files = (events[compaction] as Extract<WorkmemEvent, { type: 'compaction_end' }>).files;
        expect(await page.locator('#context .file-link summary').allTextContents()).toEqual(files);
        await page.locator('#context .file-link summary').first().click();
        // The body is empty until the toggle event has run, then "loading…" until the file came.
        await page.waitForFunction(() => !['', 'loading…'].includes(document.querySelector('#context .file-link pre')?.textContent ?? ''));
        expect(await page.locator('#context .file-link pre').first().textContent()).toMatch(/\S/);
        expect(await page.locator('#context .file-link pre').first().textContent()).not.toMatch(/^could not open/);
        // The README's picture (docs/visualizer.jpg is a copy of it).
        await page.setViewportSize({ width: 1280, height: 900 });
        await page.screenshot({ path: join(ARTIFACTS, 'visualizer-context.jpg'), type: 'jpeg', quality: 70, fullPage: true });
      }
      await page.screenshot({ path: join(ARTIFACTS, `visualizer-context-${name.replace(/ /g, '-')}.png`), fullPage: true });
    }
    expect(errors).toEqual([]);
    await page.close();
  });

  it("with memoryPosition 'after-history' the context view shows the memory between the history and the last message, as sent, and the groups add up", async () => {
    const llm = scriptedModel([
      { text: 'First answer.' },
      {
        toolCalls: [
          { name: 'write', arguments: { path: 'working-memory/overview.md', content: '# Working Memory\n\n- The user grows roses.\n' } },
        ],
      },
      { text: 'Noted.' },
      { text: 'Third answer.' },
    ]);
    const session = await newSession({ llm, home, settings: { memoryPosition: 'after-history', historyMode: 'phase1' } });
    for (const q of ['Hello.', 'Remember: roses.', 'What next?']) await session.prompt(q);
    await session.close();
    const { page, errors, built, show } = await openReplay(session, llm.requests.length);
    for (const i of [0, 2, 3]) {
      await show(i);
      const shown = await page.evaluate(() => {
        const messages: { role: string; content: string }[] = [];
        for (const part of Array.from(document.querySelectorAll<HTMLElement>('#context .part'))) {
          const m = Number(part.dataset.message);
          messages[m] ??= { role: part.dataset.role!, content: '' };
          if (messages[m]!.role === 'memory') messages[m]!.role = part.dataset.role!;
          messages[m]!.content += part.querySelector('.body')!.textContent;
        }
        const groups = Array.from(document.querySelectorAll<HTMLElement>('#context [data-group]')).map((g) => [
          g.dataset.group!,
          Number(g.querySelector<HTMLElement>('h3 .tokens')?.dataset.tokens || 0),
        ]);
        return { messages, groups };
      });
      const sent = llm.requests[i]!.messages;
      expect(
        shown.messages.map((m, k) => (m.role === 'tail' ? sent[k]!.role : m.role)),
        `request ${i + 1}`,
      ).toEqual(sent.map((m) => m.role));
      expect(
        shown.messages.map((m) => m.content),
        `request ${i + 1}`,
      ).toEqual(sent.map((m) => m.content ?? ''));
      const t = (built[i] as Extract<TraceRecord, { k: 'event' }>).event as Extract<WorkmemEvent, { type: 'prompt_built' }>;
      // In the order sent, adding up to the request's count.
      expect(shown.groups.map(([g]) => g)).toEqual(['system', 'history', 'memory', 'index', 'last', 'tail']);
      expect(
        shown.groups.reduce((n, [, tokens]) => n + Number(tokens), 0),
        `request ${i + 1}`,
      ).toBe(t.tokens.counted);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-context-after-history.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the context view marks pinned messages where they are sent, the pins before the window first, and draws their share', async () => {
    const llm = scriptedModel(() => ({ text: `Noted. ${'Roses want sun. '.repeat(12)}` }));
    const rules = 'Rules: metric units; no pesticides.';
    const task = 'Task: plan a rose bed by the south wall.';
    const session = await newSession({
      llm,
      home,
      pinned: [rules],
      settings: { historyMode: 'phase2', recentTurns: 1, recentTurnsStep: 1 },
    });
    await session.prompt(task, { pin: true });
    for (const q of ['Where?', 'When?', 'How deep?']) await session.prompt(q);
    await session.close();
    const { page, errors, built, show } = await openReplay(session, llm.requests.length);
    for (const i of [0, built.length - 1]) {
      await show(i);
      const shown = await page.evaluate(() => {
        const messages: { role: string; content: string; pinned: boolean }[] = [];
        for (const part of Array.from(document.querySelectorAll<HTMLElement>('#context .part'))) {
          const m = Number(part.dataset.message);
          messages[m] ??= { role: part.dataset.role!, content: '', pinned: false };
          messages[m]!.content += part.querySelector('.body')!.textContent;
          if (part.dataset.pinned === '1') messages[m]!.pinned = part.querySelector('.pin')?.textContent === 'pinned';
        }
        const heading = document.querySelector('#context [data-group="history"] h3')!.textContent;
        const segment = document.querySelector<HTMLElement>('#context .seg.pinned');
        return { messages, heading, segment: segment ? segment.title : null };
      });
      const sent = llm.requests[i]!.messages;
      expect(
        shown.messages.map((m) => m.content),
        `request ${i + 1}`,
      ).toEqual(sent.map((m) => m.content ?? ''));
      const pinnedAt = shown.messages.flatMap((m, k) => (m.pinned ? [k] : []));
      const t = (built[i] as Extract<TraceRecord, { k: 'event' }>).event as Extract<WorkmemEvent, { type: 'prompt_built' }>;
      if (i === 0) {
        // The first request: the rules, then the task (the last message, the tail after it), both in place.
        expect(pinnedAt).toEqual([1, 2]);
        expect(shown.messages[2]!.content.startsWith(task)).toBe(true);
      } else {
        // Phase 2 has moved on: the pins are sent first, right after the system message.
        expect(t.range[0]).toBeGreaterThan(2);
        expect(pinnedAt).toEqual([1, 2]);
        expect(shown.messages.slice(1, 3).map((m) => m.content)).toEqual([rules, task]);
        expect(shown.heading).toMatch(/\(2 pinned first, then #\d+–#\d+\)/);
      }
      const pinnedTokens = t.pinned!.reduce((n, k) => n + session.history.items[k]!.tokens, 0);
      expect(shown.heading).toContain(`· 2 pinned (${pinnedTokens.toLocaleString('en-US')} tokens, never compacted)`);
      expect(shown.segment).toBe(`pinned messages: ${pinnedTokens.toLocaleString('en-US')} tokens`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-context-pinned.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('at 1024×700 and 1440×900 nothing overlaps, nothing floats over the content, and chart labels and markers keep apart', async () => {
    const boxes = () => {
      type Box = { name: string; el: Element; r: DOMRect };
      const named = (el: Element) =>
        `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.getAttribute('class') ? `.${el.getAttribute('class')!.split(' ').join('.')}` : ''} "${(el.textContent ?? '').trim().slice(0, 30)}"`;
      const overlaps = (list: Element[], slack = 0.5) => {
        const out: string[] = [];
        const items: Box[] = list
          .map((el) => ({ name: named(el), el, r: el.getBoundingClientRect() }))
          .filter((b) => b.r.width > 0 && b.r.height > 0);
        for (let i = 0; i < items.length; i++)
          for (let j = i + 1; j < items.length; j++) {
            const a = items[i]!;
            const b = items[j]!;
            if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
            const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
            const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
            if (w > slack && h > slack) out.push(`${a.name} × ${b.name}`);
          }
        return out;
      };
      const all = (selector: string) => Array.from(document.querySelectorAll(selector));
      const layout = all(
        'header > *, #controls > *, main > section, aside > section, section > h2, #chart svg, #legend > li, #step > div, #timeline svg, #timeline-legend, #memory, #context .window, #context h3, #context .part > summary, #context .cached, #context p',
      );
      const floating = all('body *')
        .filter((el) => ['fixed', 'sticky'].includes(getComputedStyle(el).position))
        .map(named);
      return {
        layout: overlaps(layout),
        chartLabels: overlaps(all('#chart g.edge text, #chart g.node text, #chart g.cluster text'), 1),
        markers: overlaps(all('#timeline .marker, #timeline .axis'), 0.5),
        floating,
        wider: document.documentElement.scrollWidth - window.innerWidth,
      };
    };
    const compaction = records.findIndex((r) => r.k === 'event' && r.event.type === 'compaction_end' && r.event.replaced > 0);
    const afterCompaction = builtEvents().findIndex((r) => records.indexOf(r) > compaction);
    for (const [width, height] of [
      [1024, 700],
      [1440, 900],
    ] as const) {
      const { page, errors } = await open(`?session=${sessionId}`);
      await page.setViewportSize({ width, height });
      await page.waitForSelector('#timeline .point');
      await toRequest(page, afterCompaction);
      for (const machine of ['turn', 'session', 'historyMode']) {
        await page.click(`#machines button[data-machine="${machine}"]`);
        const found = await page.evaluate(boxes);
        expect(found, `${width}×${height} ${machine}`).toEqual({ layout: [], chartLabels: [], markers: [], floating: [], wider: 0 });
      }
      // The replay controls are in the page, above the content: never over it.
      const controls = await page.locator('#controls').boundingBox();
      const main = await page.locator('main').boundingBox();
      expect(controls!.y + controls!.height).toBeLessThanOrEqual(main!.y);
      await page.click('#machines button[data-machine="turn"]');
      await page.screenshot({ path: join(ARTIFACTS, `visualizer-${width}x${height}.png`), fullPage: false });
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it('the step panel follows the machine shown, and can step through its steps only', async () => {
    const { page, errors } = await open(`?session=${sessionId}`);
    await page.waitForSelector('#timeline .point');
    await page.click('#machines button[data-machine="historyMode"]');
    await page.check('#only-machine');
    await page.focus('body');
    await page.keyboard.press('Home');
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('ArrowRight');
      seen.push((await page.textContent('#step b'))!);
      const position = Number((await page.textContent('#position'))!.split(' / ')[0]) - 1;
      expect(steps()[position]!.machine).toBe('historyMode');
    }
    expect(new Set(seen)).toEqual(new Set(['historyMode']));
    // Without the filter, a step of another machine still shows the shown machine's state, and says which step it is.
    await page.uncheck('#only-machine');
    const other = steps().findIndex((s) => s.machine === 'turn');
    await page.locator('#slider').evaluate((el, v) => {
      (el as HTMLInputElement).value = String(v);
      el.dispatchEvent(new Event('input'));
    }, other);
    expect(await page.textContent('#step b')).toBe('historyMode');
    expect(await page.textContent('#step-current')).toMatch(/^this step: turn — /);
    // The timeline's x axis is in turns.
    const turns = await page.locator('#timeline .axis.turn').allTextContents();
    expect(turns[0]).toBe('1');
    expect(turns.map(Number).every((t, i, all) => i === 0 || t > all[i - 1]!)).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a session running live updates the open page', async () => {
    const llm = scriptedModel([
      {
        toolCalls: [
          {
            name: 'write',
            arguments: {
              path: 'working-memory/overview.md',
              content: '# Working Memory\n\n## Known facts\n- live: yes, streaming to the page\n',
            },
          },
        ],
      },
      { text: 'Live!' },
    ]);
    const session = await newSession({ llm, home, visualizer: server.port });
    const { page, errors } = await open(`?session=${session.id}`);
    await page.waitForFunction((id) => document.querySelector('#live')?.textContent?.includes(id.slice(0, 8)), session.id);
    const before = await page.textContent('#position');
    expect(await page.locator('#timeline .point').count()).toBe(0);
    await session.prompt('Stream to the page, please.');
    await page.waitForFunction(() => document.querySelectorAll('#timeline .point').length === 2);
    await page.waitForFunction(() => document.querySelector('#chart .node.active')?.id === 'state:turn.done');
    expect(await page.textContent('#position')).not.toBe(before);
    expect(await page.locator('#memory .add').allTextContents()).toContain('+ - live: yes, streaming to the page');
    await page.screenshot({ path: join(ARTIFACTS, 'visualizer-live.png') });
    await session.close();
    await page.waitForFunction(() => document.querySelector('#live')?.textContent === '● live: none');
    expect(errors).toEqual([]);
    await page.close();
    // What streamed live is also in the trace on disk.
    const reopened = await openSession(session.id, { llm: scriptedModel([]), home, env: {}, trace: false });
    expect(readFileSync(join(reopened.dir, 'trace.jsonl'), 'utf8')).toContain('Stream to the page, please.');
    await reopened.close();
  });

  it('a page opened in the middle of a live session ends with the same steps as a reload', async () => {
    // The first answer waits until the page is open: the turn is half done, its records streamed and not yet in trace.jsonl.
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const atGate = new Promise<void>((r) => (reached = r));
    const llm = scriptedModel([
      async () => {
        reached();
        await gate;
        return {
          toolCalls: [{ name: 'write', arguments: { path: 'working-memory/overview.md', content: '# Working Memory\n\n- mid: yes\n' } }],
        };
      },
      { text: 'Half way.' },
      { text: 'Second turn.' },
    ]);
    const session = await newSession({ llm, home, visualizer: server.port });
    const turn = session.prompt('Open the page now.');
    await atGate;
    await until(() => server.stats().ingested > 10);
    const { page, errors } = await open(`?session=${session.id}`);
    await page.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    release();
    await turn;
    await session.prompt('And once more.');
    await session.close();
    await page.waitForFunction(() => document.querySelector('#live')?.textContent === '● live: none');
    const live = await page.textContent('#position');
    const liveRequests = await page.locator('#timeline .point').count();
    await page.reload();
    await page.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    const steps = readTrace(join(session.dir, 'trace.jsonl')).records.filter((r) => r.k === 'step').length;
    expect(await page.textContent('#position')).toBe(`${steps} / ${steps}`);
    expect(live).toBe(`${steps} / ${steps}`);
    expect(liveRequests).toBe(3);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the context view shows the cached share when the trace reports it, and says when a trace has no messages', async () => {
    const target = await newSession({ llm: scriptedModel([]), home });
    await target.close();
    const tokens = {
      system: 700,
      memory: 200,
      history: 250,
      tail: 50,
      counted: 1200,
      calibration: 0,
      total: 1200,
      window: 8000,
      percent: 15,
    };
    const trace = [
      { k: 'header', format: 1, sessionId: target.id, ts: 1, resumed: false },
      {
        k: 'system',
        ts: 2,
        hash: 'h1',
        content: 'You are helpful.\n\n<working_memory file="x">\n# m\n</working_memory>\n\n<detail_index>\n(no files yet)\n</detail_index>',
        detailIndexTokens: 10,
      },
      { k: 'message', ts: 2, seq: 1, turn: 1, tokens: 250, message: { role: 'user', content: 'hello' } },
      {
        k: 'request',
        ts: 2,
        turn: 1,
        request: 1,
        mode: 'phase1',
        system: 'h1',
        seqs: [[1, 1]],
        tail: '\n\n<context_meta>\n{}\n</context_meta>',
        tokens: { ...tokens, cacheable: 1100 },
        reserved: 600,
      },
      { k: 'step', ts: 3, machine: 'turn', event: 'x', transitions: [], from: [], to: [], value: 'buildPrompt', turn: 1, request: 1 },
      {
        k: 'event',
        ts: 3,
        event: {
          type: 'prompt_built',
          turn: 1,
          request: 1,
          mode: 'phase1',
          messages: 2,
          range: [0, 1],
          tokens: { ...tokens, cacheable: 1100 },
          ts: 3,
        },
      },
      { k: 'step', ts: 4, machine: 'turn', event: 'x', transitions: [], from: [], to: [], value: 'stream', turn: 1, request: 1 },
      // The server's usage over the turn (issue 16's turn_end.usage).
      {
        k: 'event',
        ts: 4,
        event: {
          type: 'turn_end',
          turn: 1,
          promptId: 'p',
          status: 'done',
          text: 'ok',
          requests: 2,
          usage: { input: 2400, cached: 1800, output: 100 },
          ts: 4,
        },
      },
      // A request an older workmem recorded: its breakdown, no messages.
      {
        k: 'event',
        ts: 5,
        event: { type: 'prompt_built', turn: 1, request: 2, mode: 'phase1', messages: 2, range: [0, 1], tokens, ts: 5 },
      },
      { k: 'step', ts: 6, machine: 'turn', event: 'x', transitions: [], from: [], to: [], value: 'stream', turn: 1, request: 2 },
    ];
    writeFileSync(join(target.dir, 'trace.jsonl'), trace.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const { page, errors } = await open(`?session=${target.id}`);
    await page.waitForFunction(() => document.querySelector('#position')?.textContent === '3 / 3');
    expect(await page.textContent('#context')).toContain('recorded by an older workmem');
    await page.click('#prev-request');
    expect(await page.textContent('#context .cached')).toBe(
      'cached: 1,800 of 2,400 input tokens (75 %) over the 2 requests of turn 1, as the server reported',
    );
    expect(await page.textContent('#context .cacheable')).toContain('1,100 tokens');
    expect(await page.locator('#context .part').count()).toBe(5);
    expect(await page.textContent('#context .bar-keys')).toContain('reserved output 600');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('an unknown session id or a session without a trace is said plainly on the page', async () => {
    const { page } = await open('?session=deadbeef');
    await page.waitForSelector('#problems:not([hidden])');
    expect(await page.textContent('#problems')).toMatch(/no session with id deadbeef/);
    const untraced = await newSession({ llm: scriptedModel([]), home, trace: false });
    await untraced.close();
    await page.goto(`${server.url}/?session=${untraced.id}#token=${server.token}`);
    await page.waitForSelector('#problems:not([hidden])');
    expect(await page.textContent('#problems')).toMatch(/has no trace\b/);
    await page.close();
  });

  it('the page opened without its token says what to open, and shows no session', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/?session=${sessionId}`);
    await page.waitForSelector('#problems:not([hidden])');
    expect(await page.textContent('#problems')).toMatch(/needs the URL `workmem viz` printed, with its #token=/);
    expect(await page.locator('#session option').count()).toBe(1);
    expect(await page.textContent('body')).not.toContain(sessionId.slice(0, 8));
    await page.close();
  });

  it('a page from another origin reads nothing over fetch or /live and injects nothing over /ingest', async () => {
    const vizPort = server.port;
    const ingestedBefore = server.stats().ingested;
    const hostile = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><script>
        const viz = '127.0.0.1:${vizPort}';
        const read = {};
        const tries = [];
        tries.push(fetch('http://' + viz + '/api/sessions').then((r) => r.text()).then((t) => (read.cors = t), (e) => (read.corsError = String(e))));
        tries.push(fetch('http://' + viz + '/api/sessions', { mode: 'no-cors' }).then((r) => r.text()).then((t) => (read.noCors = t), (e) => (read.noCorsError = String(e))));
        const socket = (path, protocols, send) => new Promise((done) => {
          const got = [];
          const ws = new WebSocket('ws://' + viz + path, protocols);
          ws.onopen = () => { read[path + ' opened'] = true; for (const m of send) ws.send(JSON.stringify(m)); };
          ws.onmessage = (m) => got.push(String(m.data));
          ws.onclose = () => { read[path] = got.join(''); done(); };
          setTimeout(() => ws.close(), 1500);
        });
        const hello = { type: 'hello', sessionId: '${sessionId}' };
        const record = { type: 'record', record: { k: 'memory', ts: 1, version: 99, content: 'INJECTED', turn: 1 } };
        tries.push(socket('/live', [], []));
        tries.push(socket('/ingest', [], [hello, record]));
        tries.push(socket('/ingest', ['workmem', 'token.guess'], [hello, record]));
        Promise.all(tries).then(() => (window.result = read));
      </script>`);
    });
    hostile.listen(0, '127.0.0.1');
    await new Promise((r) => hostile.once('listening', r));
    const hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/`;
    // The user's own page is open meanwhile, on the session the hostile page names.
    const { page: own } = await open(`?session=${sessionId}`);
    await own.waitForFunction(() => document.querySelector('#position')?.textContent !== '0 / 0');
    const ownPosition = await own.textContent('#position');
    const page = await browser.newPage();
    await page.goto(hostileUrl);
    await page.waitForFunction(() => (window as unknown as { result?: unknown }).result);
    const read = await page.evaluate(() => (window as unknown as { result: Record<string, unknown> }).result);
    await page.close();
    hostile.close();
    expect(read['/live opened']).toBeUndefined();
    expect(read['/ingest opened']).toBeUndefined();
    expect(read['/live']).toBe('');
    expect(read['/ingest']).toBe('');
    expect(read.cors).toBeUndefined();
    expect(read.corsError).toMatch(/Failed to fetch/);
    expect(read.noCors ?? '').toBe('');
    expect(JSON.stringify(read)).not.toContain(sessionId.slice(0, 8));
    expect(server.stats().ingested).toBe(ingestedBefore);
    expect(await own.textContent('#position')).toBe(ownPosition);
    expect(await own.locator('#memory').textContent()).not.toContain('INJECTED');
    await own.close();
  });

  it('a forged record shows as text or is dropped, no script runs, and the CSP blocks inline script', async () => {
    const evil = (field: string) => `<img src=x onerror="window.__pwned='${field}'"><script>window.__pwned='${field}'</script>`;
    // A trace on disk with markup in every field the page shows (a hostile model, or a hand-edited file).
    const target = await newSession({ llm: scriptedModel([]), home });
    await target.close();
    const forgedTrace = [
      { k: 'header', format: 1, sessionId: target.id, ts: 1, resumed: false },
      {
        k: 'step',
        ts: 2,
        machine: 'turn',
        event: evil('event'),
        transitions: [evil('t')],
        from: [evil('from')],
        to: [evil('to')],
        value: evil('value'),
        turn: evil('turn'),
        request: evil('request'),
      },
      {
        k: 'event',
        ts: 3,
        event: {
          type: 'prompt_built',
          turn: evil('pturn'),
          request: evil('prequest'),
          mode: evil('mode'),
          messages: 1,
          range: [0, 1],
          tokens: {
            system: 1,
            memory: 1,
            history: 1,
            tail: 1,
            counted: 1,
            calibration: 0,
            total: evil('total'),
            window: evil('window'),
            percent: evil('percent'),
          },
        },
      },
      {
        k: 'event',
        ts: 4,
        event: {
          type: 'reminder',
          turn: 1,
          request: 1,
          level: evil('level'),
          reason: evil('reason'),
          rounds: evil('rounds'),
          tokensPercent: evil('tp'),
        },
      },
      {
        k: 'event',
        ts: 5,
        event: {
          type: 'memory_updated',
          turn: 1,
          request: 1,
          path: evil('path'),
          bytes: evil('bytes'),
          health: {},
          warning: evil('warning'),
        },
      },
      { k: 'event', ts: 6, event: { type: 'mode_changed', from: evil('mfrom'), to: evil('mto'), pinned: false } },
      {
        k: 'event',
        ts: 7,
        event: {
          type: 'compaction_end',
          turn: 1,
          request: 1,
          reason: evil('creason'),
          tokensBefore: evil('tb'),
          tokensAfter: 1,
          replaced: 2,
          files: [evil('files')],
        },
      },
      { k: 'memory', ts: 8, version: 1, content: evil('content'), turn: evil('mturn') },
      { k: 'memory', ts: 9, version: 2, content: `${evil('content2')}\nmore`, turn: evil('mturn2') },
      { k: 'step', ts: 10, machine: 'turn', event: 'done', transitions: [], from: [], to: [], value: 'done', turn: 1, request: 1 },
    ];
    writeFileSync(join(target.dir, 'trace.jsonl'), forgedTrace.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const { page, errors } = await open(`?session=${target.id}`);
    await page.waitForFunction(() => document.querySelector('#position')?.textContent === '2 / 2');
    await page.waitForSelector('#timeline .point');
    await page.locator('#slider').evaluate((el) => {
      (el as HTMLInputElement).value = '0';
      el.dispatchEvent(new Event('input'));
    });
    expect(await page.textContent('#step')).toContain(`<img src=x onerror="window.__pwned='turn'">`);
    expect(await page.textContent('#memory')).toContain(`<img src=x onerror="window.__pwned='content'">`);
    await page.locator('#slider').evaluate((el) => {
      (el as HTMLInputElement).value = '1';
      el.dispatchEvent(new Event('input'));
    });
    expect(await page.locator('#timeline .point title').first().textContent()).toContain(`window.__pwned='mode'`);
    expect(await page.locator('#timeline .marker title').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining(`window.__pwned='path'`), expect.stringContaining(`window.__pwned='files'`)]),
    );

    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    for (const box of ['#step', '#timeline', '#memory', '#problems', '#session'])
      expect(await page.locator(`${box} img, ${box} script`).count(), box).toBe(0);

    // Forged records streamed live into the same page are checked against the schema: dropped.
    const dropped = server.stats().dropped;
    const link = new LiveLink(`ws://127.0.0.1:${server.port}/ingest`, target.id, () => {}, home);
    for (const record of forgedTrace.slice(1, -1)) link.send(record as never);
    await until(() => server.stats().dropped >= dropped + forgedTrace.length - 2);
    link.close();
    await page.waitForTimeout(300);
    expect(await page.textContent('#position')).toBe('2 / 2');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();

    // The CSP forbids inline script and handlers: even markup put in by hand does not run.
    const blocked = await page.evaluate(async () => {
      const violations: string[] = [];
      document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
      const script = document.createElement('script');
      script.textContent = "window.__inline = 'ran'";
      document.body.append(script);
      const img = document.createElement('img');
      img.setAttribute('onerror', "window.__inline = 'handler'");
      img.src = 'data:,x';
      document.body.append(img);
      await new Promise((r) => setTimeout(r, 300));
      return { ran: (window as unknown as { __inline?: string }).__inline, violations };
    });
    expect(blocked.ran).toBeUndefined();
    expect(blocked.violations).toContain('script-src-elem');
    expect(errors.filter((e) => !/Content Security Policy/.test(e))).toEqual([]);
    await page.close();
  });
  it('round 3 new user: a page showing no session opens the session a chat --inspect starts, live, and follows it', async () => {
    const model = await startTestServer({ policy: protocolFollower({ seed: 3 }) });
    const { page, errors } = await open('');
    expect(await page.inputValue('#session')).toBe('');
    const env = { PATH: process.env.PATH, WORKMEM_HOME: home, OPENAI_BASE_URL: model.baseURL, WORKMEM_MODEL: 'workmem-test' };
    const chat = spawn(process.execPath, [cliPath(), 'chat', '--inspect-port', String(server.port)], { env, cwd: tempHome() });
    const closed = new Promise((resolve) => chat.once('close', resolve));
    let out = '';
    chat.stdout.on('data', (d) => (out += d));
    chat.stderr.resume();
    try {
      await until(() => /session [0-9a-f-]{36} \(new\)/.test(out));
      const id = /session ([0-9a-f-]{36}) \(new\)/.exec(out)![1]!;
      await page.waitForFunction((id) => (document.querySelector('#session') as HTMLSelectElement).value === id, id);
      chat.stdin.write('My dog is Rex.\n');
      await page.waitForFunction(() => document.querySelectorAll('#timeline .point').length >= 1);
      await page.waitForFunction(() => document.querySelector('#chart .node.active')?.id === 'state:turn.done');
      chat.stdin.end('/exit\n');
      await closed;
      await page.waitForFunction(() => document.querySelector('#live')?.textContent === '● live: none');
      expect(await page.inputValue('#session')).toBe(id);
      expect(errors).toEqual([]);
    } finally {
      chat.kill('SIGKILL');
      await page.close();
      await model.close();
    }
  });
});
