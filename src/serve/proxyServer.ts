/**
 * `workmem serve`: a working-memory proxy that speaks the Chat Completions API. Any program
 * that talks to an OpenAI-compatible base URL talks to this one instead: POST
 * /v1/chat/completions (streamed or not) goes through the workmem session of its
 * conversation (exchange.ts; which one: the header, `user`, else conversationIndex.ts), GET
 * /v1/models is passed through, everything else is 404. Every request passes the doors
 * (proxyDoors.ts: a token, on loopback too) first; bodies and answers are bounded; errors are
 * OpenAI-shaped and keep the upstream's status; keys never reach a log, a trace or an error
 * (redact.ts). Each request is one line of the request log (requestLog.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { userinfoSecrets } from '../llm/baseUrl.js';
import { modelLimits } from '../llm/models.js';
import { yieldIfBusy } from '../runtime/fairYield.js';
import { redactor, type Redact } from '../secrets/redact.js';
import { HostLoopError, type HostLoop, type HostLoopOptions } from '../session/hostLoop.js';
import { removeSession } from '../session/registry.js';
import type { SettingsOverrides } from '../settings/config.js';
import { openStateStore } from '../storage/openStateStore.js';
import { stateStorePath } from '../storage/sessionPaths.js';
import type { SessionStore } from '../storage/sessionStore.js';
import { clientContextFor, type TelemetryOption } from '../telemetry/telemetryOption.js';
import { SessionInUseError } from '../storage/storeErrors.js';
import { newToken } from '../trace/liveProtocol.js';
import { BadRequestError, readClientRequest, type ClientRequest } from './chatWire.js';
import { ClientStream, completionOf } from './clientAnswer.js';
import { ConversationIndex, type Placement } from './conversationIndex.js';
import { heldAnswer, runExchange, type ExchangeSink } from './exchange.js';
import { isLoopback, proxyRefusal, type Doors } from './proxyDoors.js';
import { advertiseKeepAlive, keepAliveAhead } from '../http/keepAlive.js';
import { RequestLogEntry } from './requestLog.js';
import { SessionGate } from './sessionGate.js';
import { SESSION_HEADER, sessionNameOf } from './sessionNaming.js';
import { Upstream } from './upstream.js';
import { readBody, sendError, sendJson } from '../http/jsonHttp.js';

export interface ProxyOptions {
  /** The upstream's base URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1. */
  upstream: string;
  /** The upstream's key, from the proxy's environment (never from a flag). */
  apiKey?: string;
  /** Send the client's Authorization upstream instead of apiKey. */
  forwardAuth?: boolean;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port (the server says which). */
  port?: number;
  /** What clients must send (a bearer token, or x-workmem-token), on loopback too; default a new one (ProxyServer.token). */
  token?: string;
  home: string;
  store?: SessionStore;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The model's window, for every model; default: the known window of the request's model. */
  contextWindow?: number;
  settings?: SettingsOverrides;
  /** Request bodies past this are refused (413). Default 32 MiB. */
  maxRequestBytes?: number;
  /** Wait for the upstream's first output and between its chunks. Default 600 s. */
  timeoutMs?: number;
  /** How long a request waits for a session another proxy holds. Default 30 s. */
  leaseWaitMs?: number;
  /** How long a session stays open after a request, for the conversation's next one (its lease held). Default 5 s; 0 closes at once. */
  keepOpenMs?: number;
  /** Keep each session's trace for the visualizer (default true). */
  trace?: boolean;
  /** Stream the sessions' traces live to `workmem viz` (as --inspect does). */
  visualizer?: true | number | string;
  warn?: (message: string) => void;
  /** OpenTelemetry (SessionOptions.telemetry); on, each request continues its client's traceparent. */
  telemetry?: TelemetryOption;
  /** One line per request (requestLog.ts): its session, status, calls, tokens and time; never a key or a message's text. */
  log?: (line: string) => void;
}

export interface ProxyServer {
  /** The base URL for clients, ending in /v1. */
  url: string;
  port: number;
  /** The token clients send (`Authorization: Bearer <token>`, or `x-workmem-token` with --forward-auth). */
  token: string;
  close(): Promise<void>;
}

/** The port is taken: said in workmem's words, with what to do. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
  constructor(
    readonly host: string,
    readonly port: number,
    options?: ErrorOptions,
  ) {
    super(
      `port ${port} on ${host} is in use (another workmem serve, or another program): give another with --port, or --port 0 for a free one`,
      options,
    );
  }
}

const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** /v1/models is a short list; a larger answer is not passed on. */
const MAX_MODELS_BYTES = 4 * 1024 * 1024;

export async function startProxy(options: ProxyOptions): Promise<ProxyServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? newToken();
  const doors: Doors = { loopback: isLoopback(host), token, forwardAuth: options.forwardAuth === true };
  const secrets = [options.apiKey, ...userinfoSecrets(options.upstream)];
  const hide = redactor(secrets);
  const upstream = new Upstream(
    { baseURL: options.upstream, ...(options.apiKey ? { apiKey: options.apiKey } : {}), timeoutMs: options.timeoutMs ?? 600_000 },
    hide,
  );
  const gate = new SessionGate(options.leaseWaitMs ?? 30_000, options.keepOpenMs ?? 5_000);
  const state = await openStateStore(stateStorePath(options.home), undefined, options.store, options.warn);
  const conversations = new ConversationIndex(state);
  await conversations.sweep().catch((error: unknown) => options.warn?.(`old answers were not swept: ${messageOf(error)}`));
  const log = options.log ?? (() => {});
  const maxBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;
  const inClientContext = await clientContextFor(options.telemetry);
  let port = 0;

  const loopOptions = (request: ClientRequest, auth: string | undefined): HostLoopOptions => {
    const contextWindow = options.contextWindow ?? modelLimits(request.model).contextWindow;
    return {
      model: request.model,
      provider: 'openai', // the wire it speaks
      contextWindow,
      // The client's limit (within half the window), else what openaiChat reserves by default.
      maxOutputTokens: Math.min(request.maxTokens?.value ?? 4096, Math.floor(contextWindow / (request.maxTokens ? 2 : 4))),
      home: options.home,
      ...(options.store ? { store: options.store } : {}),
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      ...(options.settings ? { settings: options.settings } : {}),
      ...(options.trace === false ? { trace: false } : {}),
      ...(options.visualizer !== undefined ? { visualizer: options.visualizer } : {}),
      ...(options.warn ? { warn: options.warn } : {}),
      ...(options.telemetry !== undefined ? { telemetry: options.telemetry } : {}),
      secrets: [...secrets, auth?.replace(/^Bearer\s+/i, '')].filter((s): s is string => !!s),
      recordToolResults: true,
    };
  };

  async function chat(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry): Promise<void> {
    const raw = await readBody(req, maxBytes);
    if (raw === null) {
      // The rest of the body is not read: the connection closes once the refusal is sent.
      res.setHeader('connection', 'close');
      res.on('finish', () => req.destroy());
      return sendError(res, 413, `the request body is larger than ${maxBytes} bytes`, 'invalid_request_error');
    }
    // A body of megabytes is read, parsed and checked in steps, other sessions' requests let in between.
    await yieldIfBusy();
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return sendError(res, 400, 'the request body is not JSON', 'invalid_request_error');
    }
    await yieldIfBusy();
    const request = readClientRequest(parsed);
    const named = sessionNameOf(req.headers[SESSION_HEADER], request.user);
    // Unnamed: the session that holds what the request holds, or none (a first request, a side request).
    const placement = named ? null : await conversations.place(request.instructions, request.conversation, request.tools.length > 0);
    entry.placed(named ? named.source : placement!.why);
    const auth = doors.forwardAuth ? req.headers.authorization : undefined;
    const hideAll: Redact = auth ? redactor([...secrets, auth.replace(/^Bearer\s+/i, '')]) : hide;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let stream: ClientStream | null = null;
    let reply: (() => void) | null = null;
    const exchange = async (loop: HostLoop | null): Promise<void> => {
      const id = loop?.session.id ?? null;
      entry.session(id);
      const headers: Record<string, string> = id ? { [SESSION_HEADER]: id } : {};
      stream = request.stream ? new ClientStream(res, headers) : null;
      const sink: ExchangeSink = stream ?? { begin: () => {}, delta: () => {} };
      const outcome = await runExchange(loop, request, upstream, auth, abort.signal, sink);
      if (!outcome.ok) {
        const { failure } = outcome;
        const body = { error: { ...failure.body.error, message: hideAll(failure.body.error.message) } };
        entry.failed(failure.status, body.error.message);
        if (stream?.begun) stream.fail({ ...failure, body });
        else reply = () => sendJson(res, failure.status, body, { ...headers, ...failure.headers });
        return;
      }
      entry.answered(outcome.answer);
      if (placement) await conversations.answered(placement, request.instructions, heldAnswer(outcome.answer), id);
      if (stream) stream.finish(outcome.answer, request.streamUsage);
      else {
        const completion = completionOf(outcome.answer);
        reply = () => sendJson(res, 200, completion, headers);
      }
    };
    if (placement?.kind === 'pass') await exchange(null);
    else {
      const name = named?.name ?? (placement as Extract<Placement, { kind: 'session' }>).id;
      await gate.use(name, loopOptions(request, auth), exchange, { removeRefused: (id) => removeRefused(id) });
    }
    // Answered once the session is closed (its lease given back): the client's next request may go to any proxy.
    if (reply) (reply as () => void)();
    else (stream as ClientStream | null)?.end();
  }

  /** A session a refused request created: nothing of it is kept. */
  async function removeRefused(id: string): Promise<void> {
    await removeSession(id, { home: options.home, ...(options.store ? { store: options.store } : {}) }).catch(() => {});
    await conversations.forget(id).catch(() => {});
  }

  async function models(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry): Promise<void> {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    let answer;
    try {
      answer = await upstream.models(doors.forwardAuth ? req.headers.authorization : undefined, abort.signal);
    } catch (error) {
      const failure = upstream.failure(error);
      entry.failed(failure.status, failure.body.error.message);
      return sendJson(res, failure.status === 504 ? 504 : 502, failure.body);
    }
    if (answer.body.length > MAX_MODELS_BYTES)
      return sendError(res, 502, 'the upstream sent a model list too large to pass on', 'upstream_error');
    res.writeHead(answer.status, { 'content-type': answer.type });
    res.end(answer.body);
  }

  const server: Server = createServer((req, res) => {
    advertiseKeepAlive(req, res);
    const path = (req.url ?? '/').split('?')[0]!;
    const entry = new RequestLogEntry(req.method ?? '?', path.length > 64 ? `${path.slice(0, 63)}…` : path);
    res.on('close', () => log(entry.line(res.statusCode)));
    const refuse = (status: number, message: string, type: string, code: string | null = null, param: string | null = null): void => {
      entry.refused(message);
      sendError(res, status, message, type, code, param);
    };
    const refused = proxyRefusal(req, port, doors);
    if (refused) return refuse(refused.status, refused.reason, 'invalid_request_error');
    const route =
      req.method === 'POST' && path === '/v1/chat/completions' ? chat : req.method === 'GET' && path === '/v1/models' ? models : null;
    if (!route)
      return refuse(
        404,
        `no route for ${req.method} ${path}: workmem serve answers POST /v1/chat/completions and GET /v1/models`,
        'invalid_request_error',
      );
    (inClientContext ? inClientContext(req.headers, () => route(req, res, entry)) : route(req, res, entry)).catch((error: unknown) => {
      if (res.headersSent) {
        entry.refused(hide(messageOf(error)));
        if (!res.writableEnded)
          res.end(`data: ${JSON.stringify({ error: { message: hide(messageOf(error)), type: 'server_error' } })}\n\n`);
        return;
      }
      if (error instanceof BadRequestError) return refuse(400, error.message, 'invalid_request_error', error.code, error.param);
      if (error instanceof RangeError) return refuse(400, hide(error.message), 'invalid_request_error');
      if (error instanceof SessionInUseError) {
        res.setHeader('retry-after', '1');
        return refuse(409, hide(`the session is busy in another proxy: ${error.message}`), 'session_in_use', 'session_in_use');
      }
      const what = error instanceof HostLoopError ? `the session could not take the request: ${error.message}` : messageOf(error);
      refuse(500, hide(what), 'server_error');
    });
  });
  server.headersTimeout = 60_000;
  keepAliveAhead(server);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => resolve());
    });
  } catch (error) {
    await state.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(host, options.port ?? 0, { cause: error });
    throw error;
  }
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/v1`,
    port,
    token,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await gate.close();
      await state.close();
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
