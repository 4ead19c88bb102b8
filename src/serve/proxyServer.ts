/**
 * `workmem serve`: a working-memory proxy that speaks the Chat Completions API, the Responses
 * API and Anthropic's Messages API. A program that talks to an OpenAI- or Anthropic-compatible
 * base URL talks to this one instead: POST /v1/chat/completions, /v1/responses and
 * /v1/messages (streamed or not) go through the workmem session of their conversation
 * (exchange.ts; which one: the header, `user`, else conversationIndex.ts), each read and
 * answered by its protocol's wire (clientWire.ts) and sent to an upstream that speaks it;
 * GET /v1/models is passed through; everything else is 404. Every request passes the doors
 * (proxyDoors.ts: a token, on loopback too) first; bodies and answers are bounded; errors have
 * the protocol's shape and keep the upstream's status; keys never reach a log, a trace or an
 * error (redact.ts). Each request is one line of the request log (requestLog.ts).
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
import { chatDoor } from './chatDoor.js';
import { BadRequestError } from './chatWire.js';
import type { ClientSink, ClientWire, DoorRequest, WireShape } from './clientWire.js';
import { ConversationIndex, type Placement } from './conversationIndex.js';
import { heldAnswer, runExchange, type ExchangeSink } from './exchange.js';
import { messagesDoor } from './messagesDoor.js';
import { MessagesUpstream } from './messagesUpstream.js';
import { responsesDoor } from './responsesDoor.js';
import { ResponsesUpstream } from './responsesUpstream.js';
import { PortInUseError } from './portInUse.js';
import { isLoopback, proxyRefusal, type Doors } from './proxyDoors.js';
import { keepAliveAhead } from '../http/keepAlive.js';
import { RequestLogEntry } from './requestLog.js';
import { SessionGate } from './sessionGate.js';
import { SESSION_HEADER, sessionNameOf } from './sessionNaming.js';
import { Upstream } from './upstream.js';
import { readBodyPieces, sendError, sendJson } from '../http/jsonHttp.js';
import { parseJsonInSlices } from '../http/slicedJson.js';

export { PortInUseError };

export interface ProxyOptions {
  /**
   * The upstream's base URL for every protocol, e.g. https://api.openai.com/v1 or
   * http://127.0.0.1:8080/v1: each protocol's requests go to its own path there.
   */
  upstream?: string;
  /** A protocol's upstream where it is not `upstream` (an Anthropic client's requests go to an Anthropic-compatible server). */
  upstreams?: { chat?: string; responses?: string; messages?: string };
  /** The key of the Chat Completions and Responses upstreams, from the proxy's environment (never from a flag). */
  apiKey?: string;
  /** The key of the Messages upstream (sent as x-api-key), from the proxy's environment. */
  anthropicApiKey?: string;
  /** Send the client's own key upstream (Authorization; x-api-key for Messages) instead of the proxy's. */
  forwardAuth?: boolean;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port (the server says which). */
  port?: number;
  /**
   * What clients must send, on loopback too: a bearer token (an Anthropic client's x-api-key
   * too), or x-workmem-token with --forward-auth. Default a new one (ProxyServer.token).
   */
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
  /** The token clients send (`Authorization: Bearer <token>`, `x-api-key`, or `x-workmem-token` with --forward-auth). */
  token: string;
  close(): Promise<void>;
}

const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** /v1/models is a short list; a larger answer is not passed on. */
const MAX_MODELS_BYTES = 4 * 1024 * 1024;
/** What a body that is not JSON parses to. */
const NOT_JSON = Symbol('not JSON');

export async function startProxy(options: ProxyOptions): Promise<ProxyServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? newToken();
  const doors: Doors = { loopback: isLoopback(host), token, forwardAuth: options.forwardAuth === true };
  const bases = {
    chat: options.upstreams?.chat ?? options.upstream,
    responses: options.upstreams?.responses ?? options.upstream,
    messages: options.upstreams?.messages ?? options.upstream,
  };
  if (!bases.chat && !bases.responses && !bases.messages) throw new Error('give an upstream: one for every protocol, or one per protocol');
  const secrets = [options.apiKey, options.anthropicApiKey, ...Object.values(bases).flatMap((url) => (url ? userinfoSecrets(url) : []))];
  const hide = redactor(secrets);
  const upstreamAt = (baseURL: string | undefined, apiKey: string | undefined) =>
    baseURL ? new Upstream({ baseURL, ...(apiKey ? { apiKey } : {}), timeoutMs: options.timeoutMs ?? 600_000 }, hide) : null;
  const upstream = upstreamAt(bases.chat, options.apiKey);
  const responses = upstreamAt(bases.responses, options.apiKey);
  const messages = upstreamAt(bases.messages, undefined);
  const gate = new SessionGate(options.leaseWaitMs ?? 30_000, options.keepOpenMs ?? 5_000);
  const state = await openStateStore(stateStorePath(options.home), undefined, options.store, options.warn);
  const conversations = new ConversationIndex(state);
  await conversations.sweep().catch((error: unknown) => options.warn?.(`old answers were not swept: ${messageOf(error)}`));
  const log = options.log ?? (() => {});
  const maxBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;
  const inClientContext = await clientContextFor(options.telemetry);
  let port = 0;

  const loopOptions = (request: DoorRequest, auth: string | undefined, door: ClientWire<DoorRequest>['loop']): HostLoopOptions => {
    const contextWindow = options.contextWindow ?? modelLimits(request.model).contextWindow;
    return {
      model: request.model,
      ...door, // the wire's: who speaks it, how its upstream caches
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

  /** One request of a protocol's clients: read, through the session, answered in the protocol's shape. */
  async function serveWire<R extends DoorRequest>(
    wire: ClientWire<R>,
    req: IncomingMessage,
    res: ServerResponse,
    entry: RequestLogEntry,
  ): Promise<void> {
    const raw = await readBodyPieces(req, maxBytes);
    if (raw === null) {
      // The rest of the body is not read: the connection closes once the refusal is sent.
      res.setHeader('connection', 'close').removeHeader('keep-alive');
      res.on('finish', () => req.destroy());
      return sendWireError(wire, res, 413, `the request body is larger than ${maxBytes} bytes`, 'invalid_request_error');
    }
    // A body of megabytes is read, parsed and checked in steps, other sessions' requests let in between.
    await yieldIfBusy();
    const parsed: unknown = await parseJsonInSlices(raw, yieldIfBusy).catch(() => NOT_JSON);
    if (parsed === NOT_JSON) return sendWireError(wire, res, 400, 'the request body is not JSON', 'invalid_request_error');
    await yieldIfBusy();
    const request = wire.read(parsed, req.headers);
    const upstream = wire.upstream;
    if (!upstream) return sendWireError(wire, res, 404, `workmem serve was given no upstream for ${wire.name}`, 'not_found_error');
    const named = sessionNameOf(req.headers[SESSION_HEADER], request.user);
    // Unnamed: the session that holds what the request holds, or none (a first request, a side request).
    const placement = named ? null : await conversations.place(request.instructions, request.conversation, request.tools.length > 0);
    entry.placed(named ? named.source : placement!.why);
    const auth = doors.forwardAuth ? wire.credential(req.headers) : undefined;
    const hideAll: Redact = auth ? redactor([...secrets, auth.replace(/^Bearer\s+/i, '')]) : hide;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let stream: ClientSink | null = null;
    let reply: (() => void) | null = null;
    const exchange = async (loop: HostLoop | null): Promise<void> => {
      const id = loop?.session.id ?? null;
      entry.session(id);
      const headers: Record<string, string> = id ? { [SESSION_HEADER]: id } : {};
      stream = request.stream ? wire.stream(res, headers, request) : null;
      const sink: ExchangeSink = stream ?? { begin: () => {}, delta: () => {} };
      const outcome = await runExchange(loop, request, upstream, auth, abort.signal, sink);
      if (!outcome.ok) {
        const { failure } = outcome;
        const body = { error: { ...failure.body.error, message: hideAll(failure.body.error.message) } };
        entry.failed(failure.status, body.error.message);
        if (stream?.begun) stream.fail({ ...failure, body });
        else reply = () => sendJson(res, failure.status, wire.error(failure.status, body.error), { ...headers, ...failure.headers });
        return;
      }
      entry.answered(outcome.answer);
      if (placement) await conversations.answered(placement, request.instructions, heldAnswer(outcome.answer), id);
      if (stream) stream.finish(outcome.answer);
      else {
        const answer = wire.json(outcome.answer, request);
        reply = () => sendJson(res, 200, answer, headers);
      }
    };
    if (placement?.kind === 'pass') await exchange(null);
    else {
      const name = named?.name ?? (placement as Extract<Placement, { kind: 'session' }>).id;
      await gate.use(name, loopOptions(request, auth, wire.loop), exchange, { removeRefused: (id) => removeRefused(id) });
    }
    // Answered once the session is closed (its lease given back): the client's next request may go to any proxy.
    if (reply) (reply as () => void)();
    else (stream as ClientSink | null)?.end();
  }

  /** A session a refused request created: nothing of it is kept. */
  async function removeRefused(id: string): Promise<void> {
    await removeSession(id, { home: options.home, ...(options.store ? { store: options.store } : {}) }).catch(() => {});
    await conversations.forget(id).catch(() => {});
  }

  /** Each protocol's route: its shape (for errors) and its handler. */
  const route = <R extends DoorRequest>(wire: ClientWire<R>) => ({
    shape: wire as WireShape,
    serve: (req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry) => serveWire(wire, req, res, entry),
  });
  const wires = [
    route(chatDoor(upstream)),
    route(responsesDoor(responses && new ResponsesUpstream(responses))),
    route(messagesDoor(messages && new MessagesUpstream(messages, options.anthropicApiKey))),
  ];

  async function models(req: IncomingMessage, res: ServerResponse, entry: RequestLogEntry): Promise<void> {
    const listing = upstream ?? responses;
    if (!listing) return sendError(res, 404, 'workmem serve was given no OpenAI-compatible upstream to list models of', 'not_found_error');
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    let answer;
    try {
      answer = await listing.models(doors.forwardAuth ? req.headers.authorization : undefined, abort.signal);
    } catch (error) {
      const failure = listing.failure(error);
      entry.failed(failure.status, failure.body.error.message);
      return sendJson(res, failure.status === 504 ? 504 : 502, failure.body);
    }
    if (answer.body.length > MAX_MODELS_BYTES)
      return sendError(res, 502, 'the upstream sent a model list too large to pass on', 'upstream_error');
    res.writeHead(answer.status, { 'content-type': answer.type });
    res.end(answer.body);
  }

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const entry = new RequestLogEntry(req.method ?? '?', path.length > 64 ? `${path.slice(0, 63)}…` : path);
    res.on('close', () => log(entry.line(res.statusCode)));
    // Refusals and errors in the shape of the protocol the path belongs to.
    const shape = (wires.find((w) => path === w.shape.path || path.startsWith(`${w.shape.path}/`)) ?? wires[0]!).shape;
    const refuse = (status: number, message: string, type: string, code: string | null = null, param: string | null = null): void => {
      entry.refused(message);
      sendWireError(shape, res, status, message, type, code, param);
    };
    const refused = proxyRefusal(req, port, doors);
    if (refused) return refuse(refused.status, refused.reason, 'invalid_request_error');
    const handler =
      req.method === 'POST'
        ? wires.find((w) => w.shape.path === path)?.serve
        : req.method === 'GET' && path === '/v1/models'
          ? models
          : undefined;
    if (!handler)
      return refuse(
        404,
        `no route for ${req.method} ${path}: workmem serve answers ${wires.map((w) => `POST ${w.shape.path}`).join(', ')} and GET /v1/models`,
        'invalid_request_error',
      );
    (inClientContext ? inClientContext(req.headers, () => handler(req, res, entry)) : handler(req, res, entry)).catch((error: unknown) => {
      if (res.headersSent) {
        entry.refused(hide(messageOf(error)));
        if (!res.writableEnded)
          res.end(shape.streamError({ message: hide(messageOf(error)), type: 'server_error', param: null, code: null }));
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

/** An error the proxy itself answers, in the wire's shape. */
function sendWireError(
  wire: WireShape,
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): void {
  sendJson(res, status, wire.error(status, { message, type, param, code }));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
