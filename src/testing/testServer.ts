/**
 * A local OpenAI-compatible HTTP server for tests and demos, no API key needed.
 * POST /v1/chat/completions (SSE streaming framed like OpenAI's: role chunk, content and
 * tool-call deltas, the finish chunk, the usage chunk, [DONE]; or one JSON response) and
 * GET /v1/models, on 127.0.0.1 at a random port. A policy decides the replies; faults
 * are injected on demand; every request is recorded for assertions.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { ChatMessage } from '../history/messages.js';
import { loadTokenCounter, type TokenCounter } from '../tokens/tokens.js';
import type { ChatRequest, Policy, PolicyReply } from './wire.js';
import { corruptStream, pieces as bytePieces } from './streamCorruption.js';

export type Fault =
  /** Wait before answering. */
  | { type: 'latency'; ms: number }
  /** 429 with a retry-after header (seconds; null: none), and any other headers (`retry-after-ms`, `x-should-retry`). */
  | { type: 'rate_limit'; retryAfterSeconds?: number | null; headers?: Record<string, string> }
  /** An HTTP error status, 500 by default, with any headers. */
  | { type: 'server_error'; status?: number; headers?: Record<string, string> }
  /** 400 context_length_exceeded, as OpenAI sends it. */
  | { type: 'context_length' }
  /** The connection is cut after this many SSE chunks. */
  | { type: 'reset'; afterChunks?: number }
  /** The stream ends cleanly after this many chunks, without a finish reason or [DONE]. */
  | { type: 'truncate'; afterChunks?: number }
  /** A non-JSON SSE event after this many chunks. */
  | { type: 'garbage'; afterChunks?: number; data?: string }
  /** A pause of `ms` after this many chunks. */
  | { type: 'stall'; afterChunks?: number; ms: number }
  /** The first tool call's arguments are cut in half (a tool call is added if there is none). */
  | { type: 'malformed_tool_json' }
  /** No content and no tool calls. */
  | { type: 'empty' }
  /** An unusual finish reason. */
  | { type: 'finish_reason'; value: string }
  /** The SSE bytes damaged at random, reproducibly by seed (see streamCorruption.ts). */
  | { type: 'corrupt'; seed: number }
  /** Text deltas (`text`, default "all work and no play ") forever, as fast as the client reads, until it hangs up. */
  | { type: 'endless'; text?: string }
  /** After the role chunk, keep-alive chunks (`choices: []`) every `everyMs` and nothing else, until the client hangs up. */
  | { type: 'keepalive'; everyMs: number }
  /** After the role chunk, `chunks` reasoning deltas (`reasoning_content`) `everyMs` apart, then the answer. */
  | { type: 'thinking'; chunks: number; everyMs: number };

/** Faults by request index (an entry may be null, one fault or several), or a function deciding them. */
export type FaultPlan =
  readonly (Fault | readonly Fault[] | null)[] | ((index: number, request: ChatRequest) => Fault | readonly Fault[] | null);

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
  /** Scale reported prompt tokens, like a server whose tokenizer differs from ours (default 1). */
  promptTokenScale?: number;
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
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return sendError(res, 404, `no route for ${req.method} ${path}`, 'invalid_request_error');
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    const raw = await readBody(req);
    if (raw === null) return sendError(res, 413, 'request body too large', 'invalid_request_error');
    let body: ChatRequest;
    try {
      body = JSON.parse(raw) as ChatRequest;
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    const problem = checkRequest(body) ?? (options.strict ? unpairedTools(body.messages) : null);
    if (problem) return sendError(res, 400, problem, 'invalid_request_error');

    const index = chatIndex++;
    const faults = faultsFor(index, body);
    const promptTokens = promptTokensOf(counter, body);
    const record: RecordedRequest = {
      index,
      method: req.method,
      path,
      headers: redactHeaders(req.headers),
      body,
      faults,
      status: 200,
      promptTokens,
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
      return sendError(res, record.status, 'The server had an error while processing your request.', 'server_error');
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
    const usage = {
      prompt_tokens: Math.round(promptTokens * (options.promptTokenScale ?? 1)),
      completion_tokens: countCompletion(counter, completion),
      total_tokens: 0,
    };
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
            logprobs: null,
            finish_reason: completion.finishReason,
          },
        ],
        ...(options.reportUsage !== false ? { usage } : {}),
        system_fingerprint: 'fp_workmem',
      });
    }
    const includeUsage = body.stream_options?.include_usage === true && options.reportUsage !== false;
    const chunks = streamChunks(completion, chunkChars).map((choice) => ({
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

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
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

interface Completion {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string;
}

function completionOf(reply: PolicyReply): Completion {
  const toolCalls = (reply.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `call_${randomBytes(8).toString('hex')}${i}`,
    name: c.name,
    arguments: c.arguments,
  }));
  return {
    content: reply.content ?? (toolCalls.length ? null : ''),
    toolCalls,
    finishReason: reply.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
  };
}

function applyReplyFaults(reply: PolicyReply, faults: Fault[]): PolicyReply {
  let out = reply;
  if (faults.some((f) => f.type === 'empty')) out = { content: '', toolCalls: [] };
  if (faults.some((f) => f.type === 'malformed_tool_json')) {
    const calls = out.toolCalls?.length
      ? out.toolCalls
      : [{ name: 'write', arguments: '{"path":"working-memory/overview.md","content":"x"}' }];
    out = {
      ...out,
      toolCalls: calls.map((c, i) =>
        i === 0 ? { ...c, arguments: c.arguments.slice(0, Math.max(1, Math.floor(c.arguments.length / 2))) } : c,
      ),
    };
  }
  const finish = faults.find((f): f is Extract<Fault, { type: 'finish_reason' }> => f.type === 'finish_reason');
  if (finish) out = { ...out, finishReason: finish.value };
  return out;
}

function wireToolCalls(calls: Completion['toolCalls']) {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

/** The `choices[0]` of each chunk, as OpenAI streams them. */
function streamChunks(completion: Completion, size: number): Record<string, unknown>[] {
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  });
  const out = [choice({ role: 'assistant', content: completion.toolCalls.length && !completion.content ? null : '', refusal: null })];
  for (const piece of pieces(completion.content ?? '', size)) out.push(choice({ content: piece }));
  completion.toolCalls.forEach((call, index) => {
    out.push(choice({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.arguments, size)) out.push(choice({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  out.push(choice({}, completion.finishReason));
  return out;
}

async function writeStream(res: ServerResponse, chunks: unknown[], faults: Fault[], delayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const corrupt = faults.find((f): f is Extract<Fault, { type: 'corrupt' }> => f.type === 'corrupt');
  if (corrupt) return writeCorrupted(res, chunks, corrupt.seed);
  let closed = false;
  res.on('close', () => (closed = true));
  const endless = faults.find(
    (f): f is Extract<Fault, { type: 'endless' | 'keepalive' }> => f.type === 'endless' || f.type === 'keepalive',
  );
  if (endless) return writeForever(res, chunks[0] as Record<string, unknown>, endless, () => closed);
  const at = (f: { afterChunks?: number }) => f.afterChunks ?? 1;
  for (let i = 0; i <= chunks.length; i++) {
    if (closed) return;
    for (const f of faults) {
      if (f.type === 'reset' && at(f) === i) {
        res.socket?.destroy();
        return;
      }
      if (f.type === 'truncate' && at(f) === i) {
        res.end();
        return;
      }
      if (f.type === 'garbage' && at(f) === i) res.write(`data: ${f.data ?? '{this is not json'}\n\n`);
      if (f.type === 'stall' && at(f) === i) await sleep(f.ms);
      if (f.type === 'thinking' && i === 1)
        for (let k = 0; k < f.chunks && !closed; k++) {
          await sleep(f.everyMs);
          const first = chunks[0] as { choices: Record<string, unknown>[] };
          res.write(
            `data: ${JSON.stringify({ ...first, choices: [{ ...first.choices[0], delta: { reasoning_content: 'thinking… ' } }] })}\n\n`,
          );
        }
    }
    if (i === chunks.length) break;
    if (delayMs) await sleep(delayMs);
    res.write(`data: ${JSON.stringify(chunks[i])}\n\n`);
  }
  if (!closed) res.end('data: [DONE]\n\n');
}

/** The first chunk, then content (endless) or empty keep-alive chunks, until the client hangs up. */
async function writeForever(
  res: ServerResponse,
  first: Record<string, unknown>,
  fault: Extract<Fault, { type: 'endless' | 'keepalive' }>,
  closed: () => boolean,
): Promise<void> {
  // Yield to the event loop after every chunk (the client runs in the same process in tests).
  const send = (chunk: unknown): Promise<void> =>
    new Promise((resolve) => {
      if (res.write(`data: ${JSON.stringify(chunk)}\n\n`)) setImmediate(resolve);
      else {
        res.once('drain', resolve);
        res.once('close', resolve);
      }
    });
  await send(first);
  const choice = first.choices as { delta: unknown }[];
  const text = fault.type === 'endless' ? (fault.text ?? 'all work and no play ') : '';
  while (!closed() && !res.destroyed) {
    if (fault.type === 'endless') await send({ ...first, choices: [{ ...choice[0], delta: { content: text } }] });
    else {
      await send({ ...first, choices: [] });
      await sleep(fault.everyMs);
    }
  }
}

async function writeCorrupted(res: ServerResponse, chunks: unknown[], seed: number): Promise<void> {
  const clean = Buffer.from(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);
  const damaged = corruptStream(clean, seed);
  for (const piece of bytePieces(damaged.bytes, seed)) {
    if (res.destroyed) return;
    res.write(piece);
  }
  if (damaged.reset) {
    await new Promise<void>((resolve) => res.write('', () => resolve()));
    res.socket?.destroy();
  } else res.end();
}

function pieces(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function checkRequest(body: unknown): string | null {
  if (!body || typeof body !== 'object') return 'the request body must be a JSON object';
  const b = body as Partial<ChatRequest>;
  if (typeof b.model !== 'string' || !b.model) return "'model' is a required property";
  if (!Array.isArray(b.messages) || b.messages.length === 0) return "'messages' must be a non-empty array";
  for (const [i, m] of b.messages.entries()) {
    if (!m || typeof m !== 'object' || !['system', 'user', 'assistant', 'tool', 'developer'].includes((m as ChatMessage).role)) {
      return `messages[${i}].role is missing or unknown`;
    }
  }
  return null;
}

/** Why OpenAI would refuse this message list's tool calls and results, or null. */
export function unpairedTools(messages: readonly ChatMessage[]): string | null {
  let open: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      const at = open.indexOf(m.tool_call_id);
      if (at < 0)
        return `Invalid parameter: messages[${i}]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`;
      open.splice(at, 1);
      continue;
    }
    if (open.length) return unanswered(open);
    open = m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [];
  }
  return open.length ? unanswered(open) : null;
}

function unanswered(ids: string[]): string {
  return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(', ')}`;
}

function promptTokensOf(counter: TokenCounter, body: ChatRequest): number {
  const tools = (body.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description ?? '',
    parameters: t.function.parameters ?? {},
  }));
  return counter.request(body.messages, tools);
}

function countCompletion(counter: TokenCounter, completion: Completion): number {
  return (
    counter.text(completion.content ?? '') + completion.toolCalls.reduce((n, c) => n + counter.text(c.name) + counter.text(c.arguments), 0)
  );
}

function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        resolve(null);
        req.destroy();
        return;
      }
      parts.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): void {
  sendJson(res, status, { error: { message, type, param, code } });
}

function redactHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = k === 'authorization' ? 'Bearer [redacted]' : String(v);
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
