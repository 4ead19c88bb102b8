/**
 * Example: the HTTP service of httpService.ts run as several processes (instances) against
 * one PostgreSQL, any instance able to serve any session.
 *
 *   POST /sessions                      → 201 { id }              (body: { name? })
 *   POST /sessions/:id/prompt           → text/event-stream       (body: { text })
 *   GET  /sessions/:id/memory           → { overview }
 *   a session busy in another instance  → 409 { error: 'session_in_use', message, holder, until }
 *
 * Run two:  WORKMEM_DATABASE_URL=postgres://… PORT=8081 node dist/examples/scaleOutService.js
 *           WORKMEM_DATABASE_URL=postgres://… PORT=8082 node dist/examples/scaleOutService.js
 * (and OPENAI_API_KEY, or OPENAI_BASE_URL for a local server; WORKMEM_DATABASE_SCHEMA to
 * keep the tables in a schema other than `workmem`).
 *
 * How the lease moves: an instance opens a session for a request and closes it after.
 * A session's lease (one writer, fenced by its token) is held only while a request of it
 * is served, so between requests any instance can take it, and the next request may land
 * anywhere: the log, the working memory and the meta are read from Postgres at open, so
 * the conversation continues, and so do the reminder tracker and item memories (the
 * store's state table): nothing of a session stays in the instance that served it. Requests of one session that meet in one instance
 * share the open session and queue in it (session.enqueue); one that reaches another
 * instance while the session is busy gets 409 with the holder and until when its lease
 * runs (renewed while the turn runs, released as soon as it ends): retry then. The price
 * is an open per request: one read of the session's log and memory, and the meta flushed
 * at close. The other way, holding sessions open between requests and giving them up when
 * another instance asks (by LISTEN/NOTIFY, say), saves that read but needs the signalling,
 * and an instance that dies then holds every session it had open until their leases
 * expire (30 s by default), not only those of its requests in flight.
 *
 * Routing by session id, for locality: correctness never depends on which instance gets a
 * request (the lease and its fencing token keep one writer whatever the routing), but
 * sending all requests of a session to one instance, by a consistent hash of the id in the
 * path at the load balancer (nginx `hash … consistent`, HAProxy `hash-type consistent`,
 * Envoy's ring hash), turns the 409 of two concurrent requests into a queue in that
 * instance, keeps its caches warm, and is what holding sessions open between requests
 * would need. When an instance goes, its share of the ids moves to the others, which
 * simply open those sessions.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  SessionNotFoundError,
  createSession,
  openaiChat,
  openSession,
  SessionInUseError,
  type LLM,
  type Session,
  type SessionStore,
} from '../src/index.js';
import { postgresStore } from '../src/storage/postgres/index.js';
import { json, send, streamTurn } from './httpService.js';

export interface ScaleOutService {
  url: string;
  /** Stop taking requests, close the sessions open here (their leases released), and the store. */
  close(): Promise<void>;
}

export async function startScaleOutService(options: {
  llm: LLM;
  store: SessionStore;
  home: string;
  port?: number;
}): Promise<ScaleOutService> {
  const sessions = new OpenSessions((id) => openSession(id, { llm: options.llm, store: options.store, home: options.home }));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter(Boolean);
    if (req.method === 'POST' && url.pathname === '/sessions') {
      const body = await json(req);
      const session = await createSession({
        llm: options.llm,
        store: options.store,
        home: options.home,
        cwd: '/service',
        ...(typeof body.name === 'string' ? { name: body.name } : {}),
      });
      await session.close(); // its lease released: any instance may serve its first prompt
      return send(res, 201, { id: session.id });
    }
    if (parts[0] !== 'sessions' || !parts[1] || parts.length !== 3) return send(res, 404, { error: 'no such route' });
    // The full id (a prefix names the session too): requests of one session share one entry below.
    const { id } = await options.store.find(parts[1]); // SessionNotFoundError: 404
    if (req.method === 'GET' && parts[2] === 'memory')
      return send(res, 200, { overview: await sessions.use(id, async (session) => session.memory()) });
    if (req.method === 'POST' && parts[2] === 'prompt') {
      const body = await json(req);
      if (typeof body.text !== 'string' || !body.text.trim()) return send(res, 400, { error: 'text is required' });
      const text = body.text;
      // Ended only once the session is closed, if this was its last request here: a client told
      // the turn is over may send the next prompt to any instance at once.
      await sessions.use(id, (session) => streamTurn(session, text, req, res));
      res.end();
      return;
    }
    send(res, 404, { error: 'no such route' });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return res.end();
      if (error instanceof SessionInUseError) {
        // Busy in another instance: who has it, and until when its lease runs if not renewed.
        const holder = error.pid !== null && error.host !== null ? `pid ${error.pid} on ${error.host}` : error.holder;
        const until = error.until === null ? null : new Date(error.until).toISOString();
        res.setHeader('retry-after', '1');
        return send(res, 409, { error: 'session_in_use', message: error.message, holder, until });
      }
      if (error instanceof SessionNotFoundError) return send(res, 404, { error: (error as Error).message });
      send(res, 500, { error: (error as Error).message });
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await sessions.closeAll();
      await options.store.close();
    },
  };
}

/**
 * The sessions this instance has open, each for as long as a request uses it: the first
 * request opens it (taking its lease), the last one to finish closes it (giving the lease
 * back). A request that comes while the session is still closing waits for that, so that
 * it never finds its own instance holding the lease.
 */
class OpenSessions {
  private readonly open = new Map<string, { session: Promise<Session>; users: number }>();
  private readonly closing = new Map<string, Promise<void>>();

  constructor(private readonly openOne: (id: string) => Promise<Session>) {}

  async use<T>(id: string, work: (session: Session) => Promise<T>): Promise<T> {
    let entry = this.open.get(id);
    if (!entry) {
      const closing = this.closing.get(id);
      entry = { session: (closing ?? Promise.resolve()).then(() => this.openOne(id)), users: 0 };
      this.open.set(id, entry);
    }
    entry.users++;
    try {
      return await work(await entry.session);
    } finally {
      if (--entry.users === 0 && this.open.get(id) === entry) {
        this.open.delete(id);
        const closed = entry.session.then(
          (session) => session.close(),
          () => {}, // it never opened (busy elsewhere): nothing to close
        );
        this.closing.set(id, closed);
        await closed;
        if (this.closing.get(id) === closed) this.closing.delete(id);
      }
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all([
      ...entries.map((e) =>
        e.session.then(
          (s) => s.close(),
          () => {},
        ),
      ),
      ...this.closing.values(),
    ]);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const connectionString = process.env.WORKMEM_DATABASE_URL;
  if (!connectionString) {
    console.error('scaleOutService: set WORKMEM_DATABASE_URL to the PostgreSQL all instances share');
    process.exit(2);
  }
  const schema = process.env.WORKMEM_DATABASE_SCHEMA;
  const service = await startScaleOutService({
    llm: openaiChat(),
    store: postgresStore({ connectionString, ...(schema ? { schema } : {}) }),
    home: process.env.WORKMEM_HOME ?? '.workmem-service',
    port: Number(process.env.PORT ?? 8080),
  });
  console.log(`workmem instance ${process.pid} on ${service.url}`);
  // Stopped: finish nothing new, and give back the leases of the sessions open here.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void service.close().then(() => process.exit(0)));
}
