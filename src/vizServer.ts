/**
 * The visualizer's server, on 127.0.0.1: the page and its assets (all local, nothing
 * from a CDN), the statecharts drawn from the machines, recorded traces, and a WebSocket
 * hub: sessions running with `visualizer` / `--inspect` send their trace records to
 * /ingest, and pages listening on /live receive them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { historyModeMachine } from '../machines/historyModeMachine.js';
import { sessionMachine } from '../machines/sessionMachine.js';
import { turnMachine } from '../machines/turnMachine.js';
import { findSession, listSessions } from './session.js';
import { chartOf, renderSvg, toDot, type ChartModel } from './statechart.js';
import { TRACE_FORMAT, type TraceRecord } from './traceRecorder.js';

export interface VizServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface LoadedTrace {
  records: TraceRecord[];
  problems: string[];
}

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

export async function startVizServer(options: { home: string; port?: number }): Promise<VizServer> {
  const assets = assetsDir();
  let charts: Promise<{ machine: string; svg: string; model: ChartModel }[]> | null = null;
  const drawCharts = () =>
    (charts ??= Promise.all(
      [turnMachine, sessionMachine, historyModeMachine].map(async (machine) => {
        const model = chartOf(machine);
        return { machine: machine.id, svg: await renderSvg(toDot(model)), model };
      }),
    ));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = url.pathname;
    if (req.method !== 'GET') return json(res, 405, { error: 'only GET' });
    if (path === '/' || path === '/index.html') return file(res, join(assets, 'index.html'));
    if (/^\/[\w-]+\.(js|css)$/.test(path)) return file(res, join(assets, path.slice(1)));
    if (path === '/api/charts') return json(res, 200, { charts: await drawCharts() });
    if (path === '/api/sessions') {
      const sessions = await listSessions({ home: options.home });
      return json(res, 200, { sessions: sessions.map((s) => ({ ...s, live: live.has(s.id) })) });
    }
    const trace = /^\/api\/sessions\/([\w-]+)\/trace$/.exec(path);
    if (trace) {
      let dir: string;
      try {
        dir = await findSession(trace[1]!, { home: options.home });
      } catch (error) {
        return json(res, 404, { error: (error as Error).message });
      }
      return json(res, 200, { sessionId: dir.split(/[/\\]/).pop(), ...readTrace(join(dir, 'trace.jsonl')) });
    }
    json(res, 404, { error: `no such page: ${path}` });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => json(res, 500, { error: (error as Error).message }));
  });

  // The hub: /ingest from sessions, /live to pages.
  const live = new Map<string, WebSocket>();
  const pages = new Set<WebSocket>();
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  const broadcast = (message: unknown): void => {
    const text = JSON.stringify(message);
    for (const page of pages) page.send(text);
  };
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (path !== '/ingest' && path !== '/live') return socket.destroy();
    sockets.handleUpgrade(req, socket, head, (ws) => {
      if (path === '/live') {
        pages.add(ws);
        ws.send(JSON.stringify({ type: 'live', sessions: [...live.keys()] }));
        ws.on('close', () => pages.delete(ws));
        return;
      }
      let sessionId: string | null = null;
      ws.on('message', (data) => {
        let message: { type?: string; sessionId?: string; record?: TraceRecord };
        try {
          message = JSON.parse(String(data));
        } catch {
          return;
        }
        if (message.type === 'hello' && typeof message.sessionId === 'string') {
          sessionId = message.sessionId;
          live.set(sessionId, ws);
          broadcast({ type: 'live', sessions: [...live.keys()] });
        } else if (message.type === 'record' && sessionId && message.record) {
          broadcast({ type: 'record', sessionId, record: message.record });
        }
      });
      ws.on('close', () => {
        if (sessionId && live.get(sessionId) === ws) live.delete(sessionId);
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
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
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
  const records: TraceRecord[] = [];
  const problems: string[] = [];
  let bad = 0;
  text.split('\n').forEach((line, i) => {
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
      if (bad <= 3) problems.push(`line ${i + 1} of trace.jsonl is damaged and was skipped`);
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
    res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
    res.end(body);
  } catch {
    json(res, 404, { error: 'not found' });
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
