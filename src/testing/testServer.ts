/**
 * A local model server for tests and demos, no API key needed, on 127.0.0.1 at a random
 * port. It speaks the Chat Completions API (POST /v1/chat/completions), the Responses API
 * (POST /v1/responses) and Anthropic's Messages API (POST /v1/messages), each streamed (its
 * own SSE events) or not, with its own errors (chatProtocol.ts, responsesProtocol.ts,
 * messagesProtocol.ts); GET /v1/models lists its model. Every protocol's request is read as
 * the Chat Completions body a policy decides the reply from; faults are injected on demand;
 * every request is recorded for assertions. Usage reports the prompt tokens a provider's
 * prompt cache would have served (promptCache.ts), and with explicit caching those it wrote.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadTokenCounter } from '../tokens/tokens.js';
import type { ChatRequest, Policy, PolicyReply } from './wire.js';
import type { Fault, FaultPlan } from './faults.js';
import { unpairedTools } from './requestChecks.js';
import { PromptCache, type PromptCacheOptions, type PromptCaching } from './promptCache.js';
import { applyReplyFaults, completionOf, sleep } from './sseStream.js';
import { countCompletion, promptTokensOf } from './usageCounts.js';
import { chatProtocol } from './chatProtocol.js';
import { responsesProtocol } from './responsesProtocol.js';
import { messagesProtocol } from './messagesProtocol.js';
import type { ProtocolName, TestProtocol, TestUsage } from './testProtocol.js';
import { readBody, sendError, sendJson } from '../http/jsonHttp.js';
import { keepAliveAhead } from '../http/keepAlive.js';

export type { Fault, FaultPlan, PromptCaching, PromptCacheOptions, ProtocolName };
export { unpairedTools };

export interface TestServerOptions {
  policy: Policy;
  faults?: FaultPlan;
  /** The model id the server reports (default `workmem-test`). */
  model?: string;
  /** Characters per content or arguments delta (default 8). */
  chunkChars?: number;
  /** Pause between chunks (default 0). */
  chunkDelayMs?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** When set, prompts (+ max_tokens) above it are refused with context_length_exceeded. */
  contextWindow?: number;
  /**
   * Refuse, with 400 as OpenAI does, a message list whose tool calls and results do not
   * pair: a call not answered before the next message, a result no preceding call asked for.
   */
  strict?: boolean;
  /** Send usage when the client asks for it (default true). */
  reportUsage?: boolean;
  /**
   * Usage with its details, as OpenAI's newer models report it: `completion_tokens_details`
   * (half the completion counted as reasoning) and `prompt_tokens_details.audio_tokens` (default false).
   */
  usageDetails?: boolean;
  /** Scale reported prompt tokens, like a server whose tokenizer differs from ours (default 1). */
  promptTokenScale?: number;
  /**
   * Prefix caching as providers do it, reported as `usage.prompt_tokens_details.cached_tokens`
   * (default 'automatic': OpenAI's, from 1,024 tokens in 128-token increments; 'explicit': Anthropic's, at
   * `cache_control` breakpoints; 'off'). A session is the body's `prompt_cache_key`, else
   * the `x-session-id` header, else the whole server.
   */
  promptCaching?: PromptCaching | PromptCacheOptions;
}

export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  /** The protocol the request spoke. */
  protocol: ProtocolName;
  headers: Record<string, string>;
  /** The request as the policy read it: a Chat Completions body, whatever the protocol (see `raw`). */
  body: ChatRequest;
  /** The body as the client sent it. */
  raw: unknown;
  faults: Fault[];
  /** The HTTP status sent. */
  status: number;
  promptTokens: number;
  /** Of promptTokens, those the prompt cache served (0 when caching is off). */
  cachedTokens: number;
  /** Of promptTokens, those written to the prompt cache (explicit caching only). */
  cacheWriteTokens: number;
  /** The usage the server reported for it (null when it answered none). */
  usage?: Record<string, unknown> | null;
}

export interface TestServer {
  /** e.g. http://127.0.0.1:41234/v1, ready for the OpenAI client's baseURL. */
  readonly baseURL: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Faults for the next requests, one entry per request, before the plan is consulted. */
  inject(...faults: (Fault | readonly Fault[] | null)[]): void;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024 * 1024;
const PROTOCOLS: readonly TestProtocol[] = [chatProtocol, responsesProtocol, messagesProtocol];

export async function startTestServer(options: TestServerOptions): Promise<TestServer> {
  const counter = await loadTokenCounter('gpt-4o');
  const model = options.model ?? 'workmem-test';
  const chunkChars = Math.max(1, options.chunkChars ?? 8);
  const requests: RecordedRequest[] = [];
  const injected: (Fault | readonly Fault[] | null)[] = [];
  let chatIndex = 0;
  const caching = options.promptCaching ?? 'automatic';
  const cache = new PromptCache(counter, typeof caching === 'string' ? { mode: caching } : caching);

  const faultsFor = (index: number, body: ChatRequest): Fault[] => {
    const planned = injected.length
      ? injected.shift()
      : typeof options.faults === 'function'
        ? options.faults(index, body)
        : options.faults?.[index];
    return planned ? ([] as Fault[]).concat(planned as Fault | Fault[]) : [];
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (!res.headersSent) sendError(res, 500, `test server: ${(error as Error).message}`, 'server_error');
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 1_700_000_000, owned_by: 'workmem' }] });
    }
    const protocol = req.method === 'POST' ? PROTOCOLS.find((p) => p.path === path) : undefined;
    if (!protocol) {
      const shape = path.startsWith('/v1/messages') ? messagesProtocol : chatProtocol;
      return shape.error(res, 404, 'not_found', `no route for ${req.method} ${path}`);
    }
    if (options.apiKey && !protocol.authorized(req.headers, options.apiKey)) return protocol.error(res, 401, 'auth');
    const raw = await readBody(req, MAX_BODY, (r) => r.destroy());
    if (raw === null) return protocol.error(res, 413, 'too_large');
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return protocol.error(res, 400, 'invalid', 'We could not parse the JSON body of your request.');
    }
    const read = protocol.read(body, options.strict === true);
    if ('problem' in read) return protocol.error(res, 400, 'invalid', read.problem, read.param);

    const index = chatIndex++;
    const faults = faultsFor(index, read.request);
    const promptTokens = promptTokensOf(counter, read.request);
    const session = read.cacheKey ?? String(req.headers['x-session-id'] ?? '');
    const record: RecordedRequest = {
      index,
      method: 'POST',
      path,
      protocol: protocol.name,
      headers: redactHeaders(req.headers),
      body: read.request,
      raw: body,
      faults,
      status: 200,
      promptTokens,
      cachedTokens: 0,
      cacheWriteTokens: 0,
    };
    requests.push(record);
    const fault = <T extends Fault['type']>(type: T) => faults.find((f): f is Extract<Fault, { type: T }> => f.type === type);

    const latency = fault('latency');
    if (latency) await sleep(latency.ms);
    const limited = fault('rate_limit');
    if (limited) {
      record.status = 429;
      if (limited.retryAfterSeconds !== null) res.setHeader('retry-after', String(limited.retryAfterSeconds ?? 1));
      for (const [name, value] of Object.entries(limited.headers ?? {})) res.setHeader(name, value);
      return protocol.error(res, 429, 'rate_limit');
    }
    const failed = fault('server_error');
    if (failed) {
      record.status = failed.status ?? 500;
      for (const [name, value] of Object.entries(failed.headers ?? {})) res.setHeader(name, value);
      return protocol.error(res, record.status, 'server', failed.message);
    }
    if (fault('context_length') || (options.contextWindow && promptTokens + read.maxTokens > options.contextWindow)) {
      record.status = 400;
      return protocol.error(res, 400, 'overflow', protocol.overflow(promptTokens, options.contextWindow ?? 8192));
    }

    // More than 4 cache_control marks are refused, as Anthropic refuses them (on the chat wire, where gateways pass them on).
    const refused = protocol.name === 'chat' ? cache.refusal(read.request) : null;
    if (refused) {
      record.status = 400;
      return protocol.error(res, 400, 'server', refused);
    }
    let reply: PolicyReply;
    try {
      reply = await options.policy(read.request, { index });
    } catch (error) {
      record.status = 500;
      return protocol.error(res, 500, 'server', `policy failed: ${(error as Error).message}`);
    }
    reply = applyReplyFaults(reply, faults);
    const completion = completionOf(reply);
    // Only a request that is answered reads or writes the cache.
    const { read: cached, written } = cache.use(read.cacheView ?? read.request, session, promptTokens);
    record.cachedTokens = cached;
    record.cacheWriteTokens = written;
    const scale = options.promptTokenScale ?? 1;
    const usage: TestUsage | null =
      options.reportUsage === false
        ? null
        : {
            promptTokens: Math.round(promptTokens * scale),
            completionTokens: countCompletion(counter, completion),
            cachedTokens: cache.enabled ? Math.round(cached * scale) : null,
            writtenTokens: Math.round(written * scale),
            details: options.usageDetails === true,
          };
    record.usage = usage && protocol.usage(usage);
    await protocol.answer(res, completion, read, body, faults, { model, chunkChars, chunkDelayMs: options.chunkDelayMs ?? 0, usage });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    keepAliveAhead(server);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    inject: (...faults) => injected.push(...faults),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function redactHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = k === 'authorization' ? 'Bearer [redacted]' : String(v);
  return out;
}
