/**
 * A local OpenAI-compatible HTTP server for tests and demos, no API key needed.
 * POST /v1/chat/completions (SSE streaming framed like OpenAI's: role chunk, content and
 * tool-call deltas, the finish chunk, the usage chunk, [DONE]; or one JSON response) and
 * GET /v1/models, on 127.0.0.1 at a random port. A policy decides the replies; faults
 * are injected on demand; every request is recorded for assertions. Usage reports the
 * prompt tokens a provider's prompt cache would have served (promptCache.ts). POST
 * /v1/responses is answered with a 404 that says what to use instead, and recorded.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { loadTokenCounter } from '../tokens/tokens.js';
import { withTextContent, type ChatRequest, type Policy, type PolicyReply } from './wire.js';
import type { Fault, FaultPlan } from './faults.js';
import { checkRequest, unpairedTools } from './requestChecks.js';
import { PromptCache, type PromptCacheOptions, type PromptCaching } from './promptCache.js';
import { countCompletion, promptTokensOf } from './usageCounts.js';
import { applyReplyFaults, completionOf, logprobsOf, sleep, streamChunks, textPieces, writeStream, wireToolCalls } from './sseStream.js';
import { readBody, sendError, sendJson } from '../http/jsonHttp.js';
import { advertiseKeepAlive, keepAliveAhead } from '../http/keepAlive.js';

export type { Fault, FaultPlan, PromptCaching, PromptCacheOptions };
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
  headers: Record<string, string>;
  body: ChatRequest;
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
    advertiseKeepAlive(req, res);
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
    if (req.method === 'POST' && path === '/v1/responses') return refuseResponses(req, res);
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return sendError(res, 404, `no route for ${req.method} ${path}`, 'invalid_request_error');
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    const raw = await readBody(req, MAX_BODY, (r) => r.destroy());
    if (raw === null) return sendError(res, 413, 'request body too large', 'invalid_request_error');
    let body: ChatRequest;
    try {
      // Content given as parts (text parts, as agents send them) is read as its text, as a model reads it; parts
      // with cache_control marks stay as sent, for the prompt cache (the count and the stand-in models join them).
      body = withTextContent(JSON.parse(raw) as ChatRequest, { keepMarked: true });
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    const problem = checkRequest(body) ?? (options.strict ? unpairedTools(body.messages) : null);
    if (problem) return sendError(res, 400, problem, 'invalid_request_error');

    const index = chatIndex++;
    const faults = faultsFor(index, body);
    const promptTokens = promptTokensOf(counter, body);
    const session = typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : String(req.headers['x-session-id'] ?? '');
    const record: RecordedRequest = {
      index,
      method: req.method,
      path,
      headers: redactHeaders(req.headers),
      body,
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
      return sendError(res, 429, 'Rate limit reached for requests. Please try again later.', 'requests', 'rate_limit_exceeded');
    }
    const failed = fault('server_error');
    if (failed) {
      record.status = failed.status ?? 500;
      for (const [name, value] of Object.entries(failed.headers ?? {})) res.setHeader(name, value);
      return sendError(res, record.status, failed.message ?? 'The server had an error while processing your request.', 'server_error');
    }
    const refused = cache.refusal(body);
    if (refused) {
      record.status = 400;
      return sendError(res, 400, refused, 'invalid_request_error');
    }
    const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? 0;
    if (fault('context_length') || (options.contextWindow && promptTokens + maxTokens > options.contextWindow)) {
      record.status = 400;
      const window = options.contextWindow ?? 8192;
      return sendError(
        res,
        400,
        `This model's maximum context length is ${window} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
        'invalid_request_error',
        'context_length_exceeded',
        'messages',
      );
    }

    let reply: PolicyReply;
    try {
      reply = await options.policy(body, { index });
    } catch (error) {
      record.status = 500;
      return sendError(res, 500, `policy failed: ${(error as Error).message}`, 'server_error');
    }
    reply = applyReplyFaults(reply, faults);
    const completion = completionOf(reply);
    // Only a request that is answered reads or writes the cache.
    const used = cache.use(body, session, promptTokens);
    record.cachedTokens = used.read;
    record.cacheWriteTokens = used.written;
    const scale = options.promptTokenScale ?? 1;
    // Writes as OpenRouter reports them beside the reads; a provider that charges nothing for them reports none.
    const details = {
      cached_tokens: Math.round(used.read * scale),
      ...(used.written ? { cache_write_tokens: Math.round(used.written * scale) } : {}),
    };
    const usage = {
      prompt_tokens: Math.round(promptTokens * scale),
      completion_tokens: countCompletion(counter, completion),
      total_tokens: 0,
      ...(cache.enabled || options.usageDetails
        ? { prompt_tokens_details: { ...details, ...(options.usageDetails ? { audio_tokens: 0 } : {}) } }
        : {}),
    };
    const completionTokens = usage.completion_tokens;
    record.usage = options.reportUsage !== false ? usage : null;
    if (options.usageDetails)
      Object.assign(usage, {
        completion_tokens_details: {
          reasoning_tokens: Math.floor(completionTokens / 2),
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      });
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);

    if (!body.stream) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: completion.content,
              refusal: null,
              ...(completion.toolCalls.length ? { tool_calls: wireToolCalls(completion.toolCalls) } : {}),
            },
            logprobs: body.logprobs === true ? logprobsOf(textPieces(completion.content ?? '', chunkChars)) : null,
            finish_reason: completion.finishReason,
          },
        ],
        ...(options.reportUsage !== false ? { usage } : {}),
        system_fingerprint: 'fp_workmem',
      });
    }
    const includeUsage = body.stream_options?.include_usage === true && options.reportUsage !== false;
    const chunks = streamChunks(completion, chunkChars, body.logprobs === true).map((choice) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model,
      system_fingerprint: 'fp_workmem',
      choices: [choice],
      ...(includeUsage ? { usage: null } : {}),
    }));
    if (includeUsage)
      chunks.push({
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        system_fingerprint: 'fp_workmem',
        choices: [],
        usage,
      } as never);
    await writeStream(res, chunks, faults, options.chunkDelayMs ?? 0);
  }

  /** AI SDK's default OpenAI provider speaks the Responses API: say so, and record the attempt. */
  async function refuseResponses(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req, MAX_BODY, (r) => r.destroy())) ?? '';
    let body: unknown = null;
    try {
      body = JSON.parse(raw);
    } catch {
      // recorded as sent: null
    }
    requests.push({
      index: -1,
      method: 'POST',
      path: '/v1/responses',
      headers: redactHeaders(req.headers),
      body: body as ChatRequest,
      faults: [],
      status: 404,
      promptTokens: 0,
      cachedTokens: 0,
      cacheWriteTokens: 0,
    });
    sendError(
      res,
      404,
      'workmem test server: POST /v1/responses (the Responses API) is not served; it speaks Chat Completions (POST /v1/chat/completions). ' +
        "With the AI SDK use openai.chat('<model>') from @ai-sdk/openai, or @ai-sdk/openai-compatible.",
      'invalid_request_error',
      'responses_api_not_served',
    );
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
