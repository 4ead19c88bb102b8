/**
 * Example: workmem embedded in an HTTP service that hosts many sessions and streams each
 * turn's events to the client as server-sent events.
 *
 *   POST /sessions                      → { id }                 (body: { name? })
 *   POST /sessions/:id/prompt           → text/event-stream      (body: { text })
 *   GET  /sessions/:id/memory           → { overview }
 *
 * Run it: OPENAI_API_KEY=… node dist/examples/httpService.js   (or OPENAI_BASE_URL for a local server)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSession, openaiChat, type LLM, type Session } from '../src/index.js';

export interface Service {
  url: string;
  close(): Promise<void>;
}

export async function startService(options: { llm: LLM; home: string; port?: number }): Promise<Service> {
  const sessions = new Map<string, Session>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter(Boolean);
    if (req.method === 'POST' && url.pathname === '/sessions') {
      const body = await json(req);
      const session = await createSession({
        llm: options.llm,
        home: options.home,
        cwd: '/service',
        ...(typeof body.name === 'string' ? { name: body.name } : {}),
      });
      sessions.set(session.id, session);
      return send(res, 201, { id: session.id });
    }
    const session = parts[0] === 'sessions' ? sessions.get(parts[1] ?? '') : undefined;
    if (!session) return send(res, 404, { error: 'no such session' });
    if (req.method === 'GET' && parts[2] === 'memory') return send(res, 200, { overview: session.memory() });
    if (req.method === 'POST' && parts[2] === 'prompt') {
      const body = await json(req);
      if (typeof body.text !== 'string' || !body.text.trim()) return send(res, 400, { error: 'text is required' });
      await streamTurn(session, body.text, req, res);
      res.end();
      return;
    }
    send(res, 404, { error: 'no such route' });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => (res.headersSent ? res.end() : send(res, 500, { error: (error as Error).message })));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await Promise.all([...sessions.values()].map((s) => s.close()));
    },
  };
}

/** Run one prompt on `session` and stream its turn's events, from its turn_start to its turn_end, as server-sent events (the caller ends the response). */
export async function streamTurn(session: Session, text: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const { promptId, result } = session.enqueue(text);
  let mine = false;
  const stop = session.on('*', (event) => {
    if (event.type === 'turn_start') mine = event.promptId === promptId;
    if (mine || (event.type === 'prompt_dropped' && event.promptId === promptId))
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  });
  req.on('close', () => {
    if (!res.writableEnded) session.abort(); // the client went away: stop its turn
  });
  await result;
  stop();
}

export function json(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      try {
        resolve(text ? (JSON.parse(text) as Record<string, unknown>) : {});
      } catch {
        resolve({});
      }
    });
  });
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const service = await startService({
    llm: openaiChat(),
    home: process.env.WORKMEM_HOME ?? '.workmem-service',
    port: Number(process.env.PORT ?? 8080),
  });
  console.log(`workmem service on ${service.url}`);
}
