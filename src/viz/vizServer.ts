/**
 * The visualizer's server, on 127.0.0.1: the page and its assets (all local, nothing
 * from a CDN), the statecharts drawn from the machines, recorded traces, and a WebSocket
 * hub: sessions running with `visualizer` / `--inspect` send their trace records to
 * /ingest, and pages listening on /live receive them. Every request passes the doors of
 * vizDoors.ts first; the API and the sockets need the per-run token.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { historyModeMachine } from '../../machines/historyModeMachine.js';
import { sessionMachine } from '../../machines/sessionMachine.js';
import { turnMachine } from '../../machines/turnMachine.js';
import { listSessions, readSession } from '../session/index.js';
import type { SessionStore } from '../storage/sessionStore.js';
import { chartOf, renderSvg, toDot, type ChartModel } from './statechart.js';
import { TRACE_FORMAT, type TraceRecord } from '../trace/traceRecorder.js';
import { ingestMessageSchema } from '../trace/traceSchema.js';
import { LiveRecords } from './liveRecords.js';
import { memoryFile } from './memoryFile.js';
import { bearer, refusal, subprotocols } from './vizDoors.js';
import {
  PROTOCOL,
  clientProof,
  newNonce,
  newToken,
  removeTokenFile,
  sameSecret,
  serverProof,
  writeTokenFile,
} from '../trace/liveProtocol.js';

export interface VizServer {
  url: string;
  port: number;
  /** The per-run secret: the API and the WebSockets need it. */
  token: string;
  /** The page's address with the token in its fragment (never sent to the server, never in a Referer). */
  pageUrl: string;
  /** Records passed on to pages, and ingest messages dropped as malformed. */
  stats(): { ingested: number; dropped: number };
  close(): Promise<void>;
}

export interface LoadedTrace {
  records: TraceRecord[];
  problems: string[];
}

/** Every answer: no sniffing, no Referer, no framing. */
const COMMON_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
/** The page runs our script files only: no inline script or style, no eval, nothing from elsewhere. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/** Server nonces handed out by /ingest/challenge: single use, short-lived, few at once. */
const CHALLENGE_TTL_MS = 30_000;
const CHALLENGES_MAX = 64;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The visualizer/ directory, from src/ (tests) or dist/src/ (the built CLI). */
function assetsDir(): string {
  for (let dir = import.meta.dirname; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'visualizer', 'index.html'))) return join(dir, 'visualizer');
  }
  throw new Error('the visualizer/ directory was not found next to the package');
}

/** `store`: where the sessions and their traces are (default: the home's folders). */
export async function startVizServer(options: { home: string; port?: number; store?: SessionStore }): Promise<VizServer> {
  const where = { home: options.home, ...(options.store ? { store: options.store } : {}) };
  const assets = assetsDir();
  let charts: Promise<{ machine: string; svg: string; model: ChartModel }[]> | null = null;
  const drawCharts = () =>
    (charts ??= Promise.all(
      [turnMachine, sessionMachine, historyModeMachine].map(async (machine) => {
        const model = chartOf(machine);
        return { machine: machine.id, svg: await renderSvg(toDot(model)), model };
      }),
    ));

  const token = newToken();
  let port = 0;
  let ingested = 0;
  let dropped = 0;
  const challenges = new Map<string, number>(); // server nonce → expiry

  /** The token (the page) or a proof over a nonce we issued (an --inspect session). */
  const authorised = (req: IncomingMessage, offered: string[]): boolean => {
    const presented = bearer(req) ?? offered.find((p) => p.startsWith('token.'))?.slice(6);
    if (presented !== undefined) return sameSecret(presented, token);
    const proof = offered.find((p) => p.startsWith('proof.'))?.split('.');
    if (proof?.length !== 3) return false;
    const [, nonce, mac] = proof as [string, string, string];
    const expiry = challenges.get(nonce);
    challenges.delete(nonce);
    return expiry !== undefined && expiry > Date.now() && sameSecret(mac, clientProof(token, port, nonce));
  };

  /** The server's half of the handshake: proves it holds the token, and hands out a nonce for the client's half. */
  const challenge = (res: ServerResponse, clientNonce: string | null): void => {
    if (!clientNonce || !/^[A-Za-z0-9_-]{16,64}$/.test(clientNonce)) return json(res, 400, { error: 'a nonce is needed' });
    const now = Date.now();
    for (const [nonce, expiry] of challenges) if (expiry <= now || challenges.size >= CHALLENGES_MAX) challenges.delete(nonce);
    const nonce = newNonce();
    challenges.set(nonce, now + CHALLENGE_TTL_MS);
    json(res, 200, { port, proof: serverProof(token, port, clientNonce), nonce });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const refused = refusal(req, port);
    if (refused) return plain(res, refused.status, refused.reason);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    if (req.method !== 'GET') return json(res, 405, { error: 'only GET' });
    if (path === '/' || path === '/index.html') return file(res, join(assets, 'index.html'));
    if (/^\/[\w-]+\.(js|css)$/.test(path)) return file(res, join(assets, path.slice(1)));
    if (path === '/ingest/challenge') return challenge(res, url.searchParams.get('nonce'));
    if (!path.startsWith('/api/')) return json(res, 404, { error: 'no such page' });
    if (!authorised(req, [])) return json(res, 401, { error: 'the token is missing or wrong: open the URL `workmem viz` printed' });
    if (path === '/api/charts') return json(res, 200, { charts: await drawCharts() });
    if (path === '/api/sessions') {
      const sessions = await listSessions(where);
      return json(res, 200, { sessions: sessions.map((s) => ({ ...s, live: live.has(s.id) })) });
    }
    // The context view's archive links, and what a live session streamed that its trace file lacks yet.
    const memory = /^\/api\/sessions\/([\w-]+)\/memory-file$/.exec(path);
    if (memory) return json(res, ...(await memoryFile(where, memory[1]!, url.searchParams.get('path'))));
    const stream = /^\/api\/sessions\/([\w-]+)\/live$/.exec(path);
    if (stream) return json(res, 200, { live: streamed.snapshot(stream[1]!) });
    const trace = /^\/api\/sessions\/([\w-]+)\/trace$/.exec(path);
    if (trace) {
      let session: Awaited<ReturnType<typeof readSession>>;
      try {
        session = await readSession(trace[1]!, where);
      } catch (error) {
        return json(res, 404, { error: (error as Error).message });
      }
      return json(res, 200, { sessionId: session.id, ...parseTrace(await session.readTrace(), 'the trace') });
    }
    json(res, 404, { error: 'no such page' });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => json(res, 500, { error: (error as Error).message }));
  });

  // The hub: /ingest from sessions, /live to pages.
  const live = new Map<string, WebSocket>();
  const streamed = new LiveRecords();
  const pages = new Set<WebSocket>();
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * 1024 * 1024,
    handleProtocols: (offered) => (offered.has(PROTOCOL) ? PROTOCOL : false),
  });
  // The 101 of a proven session carries the server's proof over its nonce once more, so that
  // the socket, a new connection, is checked to end at this server too.
  sockets.on('headers', (headers, req) => {
    const nonce = subprotocols(req)
      .find((p) => p.startsWith('proof.'))
      ?.split('.')[1];
    if (nonce) headers.push(`x-workmem-proof: ${serverProof(token, port, `upgrade.${nonce}`)}`);
  });
  const broadcast = (message: unknown): void => {
    const text = JSON.stringify(message);
    for (const page of pages) page.send(text);
  };
  server.on('upgrade', (req, socket, head) => {
    const refuse = (status: number, reason: string): void => {
      socket.end(`HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    };
    const refused = refusal(req, port);
    if (refused) return refuse(refused.status, refused.reason);
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path !== '/ingest' && path !== '/live') return refuse(404, 'not found');
    if (!authorised(req, subprotocols(req))) return refuse(401, 'unauthorized');
    sockets.handleUpgrade(req, socket, head, (ws) => {
      if (path === '/live') {
        pages.add(ws);
        ws.send(JSON.stringify({ type: 'live', sessions: [...live.keys()] }));
        ws.on('close', () => pages.delete(ws));
        return;
      }
      let sessionId: string | null = null;
      ws.on('message', (data) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(String(data));
        } catch {
          dropped++;
          return;
        }
        const checked = ingestMessageSchema.safeParse(parsed);
        const message = checked.data;
        if (!message || (message.type === 'hello' && sessionId !== null && message.sessionId !== sessionId)) {
          dropped++;
        } else if (message.type === 'hello') {
          sessionId = message.sessionId;
          live.set(sessionId, ws);
          streamed.open(sessionId);
          broadcast({ type: 'live', sessions: [...live.keys()] });
        } else if (
          !sessionId ||
          (message.sessionId !== undefined && message.sessionId !== sessionId) ||
          (message.record.k === 'header' && message.record.sessionId !== sessionId)
        ) {
          dropped++;
        } else {
          ingested++;
          broadcast({ type: 'record', sessionId, n: streamed.add(sessionId, message.record as TraceRecord), record: message.record });
        }
      });
      ws.on('close', () => {
        if (sessionId && live.get(sessionId) === ws) {
          live.delete(sessionId);
          streamed.close(sessionId);
        }
        broadcast({ type: 'live', sessions: [...live.keys()] });
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${options.port} is in use (another workmem viz?); choose another with --port`)
          : error,
      ),
    );
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const tokenFile = { port, token, pid: process.pid };
  try {
    writeTokenFile(options.home, tokenFile);
  } catch (error) {
    server.close();
    throw error;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    pageUrl: `http://127.0.0.1:${port}/#token=${token}`,
    stats: () => ({ ingested, dropped }),
    close: async () => {
      removeTokenFile(options.home, tokenFile);
      for (const ws of [...pages, ...live.values()]) ws.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A trace file as records, with what was wrong with it said plainly. */
export function readTrace(path: string): LoadedTrace {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { records: [], problems: ['this session has no trace.jsonl (recorded with tracing off, or by a workmem without traces)'] };
  }
  return parseTrace(text.split('\n'), 'trace.jsonl');
}

/** A trace's lines (as a store gives them) as records; `source` names it in problems. */
export function parseTrace(lines: readonly string[], source: string): LoadedTrace {
  if (!lines.some((line) => line.trim()))
    return { records: [], problems: ['this session has no trace (recorded with tracing off, or by a workmem without traces)'] };
  const records: TraceRecord[] = [];
  const problems: string[] = [];
  let bad = 0;
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const record = JSON.parse(line) as TraceRecord;
      if (!record || typeof record !== 'object' || typeof record.k !== 'string') throw new Error('not a record');
      if (record.k === 'header' && record.format !== TRACE_FORMAT) {
        problems.push(
          `line ${i + 1}: trace format ${record.format} (this visualizer reads format ${TRACE_FORMAT}); showing what it can read`,
        );
      }
      records.push(record);
    } catch {
      bad++;
      if (bad <= 3) problems.push(`line ${i + 1} of ${source} is damaged and was skipped`);
    }
  });
  if (bad > 3) problems.push(`${bad - 3} more damaged lines were skipped`);
  if (records.length && records[0]!.k !== 'header')
    problems.push('the trace has no header: it may come from an older workmem; showing what it can read');
  return { records, problems };
}

function file(res: ServerResponse, path: string): void {
  try {
    const body = readFileSync(path);
    res.writeHead(200, {
      ...COMMON_HEADERS,
      'content-type': TYPES[extname(path)] ?? 'application/octet-stream',
      'cache-control': 'no-cache',
      ...(extname(path) === '.html' ? { 'content-security-policy': CSP } : {}),
    });
    res.end(body);
  } catch {
    json(res, 404, { error: 'not found' });
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...COMMON_HEADERS, 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** A refusal at the door: a status and a word, nothing else. */
function plain(res: ServerResponse, status: number, reason: string): void {
  res.writeHead(status, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(`${reason}\n`);
}
