/**
 * The `llm` for any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama, LM
 * Studio, …) on the official SDK: Chat Completions with `stream: true` and usage in the
 * last chunk. It assembles text and tool-call deltas, watches for a stalled stream, and
 * turns every failure into an LLMError whose kind the turn machine acts on (retry,
 * compact-and-retry on overflow, or fail). The SDK's own retries are off: the machine
 * retries, visibly, with the policy given here.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { ConfigError } from '../settings/config.js';
import { LLMError, type LLM, type LLMCallOptions, type LLMErrorKind, type LLMRequest, type LLMResponse, type LLMUsage } from './llm.js';
import type { AssistantMessage } from '../history/messages.js';
import { modelLimits } from './models.js';
import { MASKED_USERINFO, redact, redactor, type Redact } from '../secrets/redact.js';
import type { RetryPolicy } from '../settings/settings.js';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIChatOptions {
  /** Default: $WORKMEM_MODEL, else gpt-4o-mini. */
  model?: string;
  /** Default: $OPENAI_BASE_URL, else OpenAI's. */
  baseURL?: string;
  /** Default: $OPENAI_API_KEY. Required for OpenAI's own endpoint only. */
  apiKey?: string;
  /** Default: from the known-models table, else 32768. */
  contextWindow?: number;
  /** Tokens reserved for the answer; default min(4096, window / 4). */
  maxOutputTokens?: number;
  /** Retries of a failed request (429, 5xx, 408/409, connection errors); default 4. */
  maxRetries?: number;
  /** Per request: until the response starts, and the longest time without content inside a stream (keep-alives do not count). Default 120 s. */
  timeoutMs?: number;
  /** A separate (often cheaper) model for compaction summaries. */
  compactionModel?: string;
  temperature?: number;
  headers?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
}

export interface OpenAIChat extends LLM {
  readonly baseURL: string;
  readonly compactionModel: string;
}

const DEFAULT_TIMEOUT_MS = 120_000;

export function openaiChat(options: OpenAIChatOptions = {}): OpenAIChat {
  const env = options.env ?? process.env;
  const model = options.model ?? env.WORKMEM_MODEL?.trim() ?? 'gpt-4o-mini';
  const baseURL = (options.baseURL ?? env.OPENAI_BASE_URL?.trim()) || OPENAI_BASE_URL;
  const isOpenAI = /^https:\/\/api\.openai\.com\b/.test(baseURL);
  const apiKey = options.apiKey ?? env.OPENAI_API_KEY?.trim();
  if (!apiKey && isOpenAI) {
    throw new ConfigError(
      'no API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a local OpenAI-compatible server (vLLM, llama.cpp, Ollama, …)',
    );
  }
  try {
    new URL(baseURL);
  } catch {
    // Unparsed, it may still carry user:password@: never shown.
    throw new ConfigError(`OPENAI_BASE_URL ${JSON.stringify(baseURL.replace(/[^\s/@"]+@/g, '***@'))} is not a URL`);
  }
  const limits = modelLimits(model);
  const contextWindow = options.contextWindow ?? limits.contextWindow;
  const maxOutputTokens = options.maxOutputTokens ?? Math.min(limits.maxOutputTokens, Math.floor(contextWindow / 4));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // A password in the URL (http://user:secret@host/v1) is a secret like the key.
  const secrets = [...(apiKey ? [apiKey] : []), ...userinfoSecrets(baseURL)];
  const hide = redactor(secrets);
  const client = new OpenAI({
    baseURL,
    apiKey: apiKey || 'no-key-needed',
    maxRetries: 0,
    timeout: timeoutMs,
    logLevel: 'off',
    ...(options.headers ? { defaultHeaders: options.headers } : {}),
  });
  // OpenAI's newer models want max_completion_tokens; most other servers know max_tokens.
  const maxParam = isOpenAI ? 'max_completion_tokens' : 'max_tokens';
  const retry: Partial<RetryPolicy> = options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries };

  const body = (request: LLMRequest, useModel: string) => ({
    model: useModel,
    messages: request.messages as ChatCompletionMessageParam[],
    ...(request.tools.length
      ? {
          tools: request.tools.map((t) => ({
            type: 'function' as const,
            function: { name: t.name, description: t.description, parameters: t.parameters },
          })),
        }
      : {}),
    [maxParam]: request.maxOutputTokens,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  });

  return {
    model,
    contextWindow,
    maxOutputTokens,
    baseURL: withoutUserinfo(baseURL),
    compactionModel: options.compactionModel ?? model,
    retry,
    secrets,

    async complete(request: LLMRequest, call: LLMCallOptions): Promise<LLMResponse> {
      const watchdog = new Watchdog(timeoutMs, call.signal);
      const assembled = new Assembler();
      try {
        const stream = await client.chat.completions.create(
          { ...body(request, model), stream: true, stream_options: { include_usage: true } } as ChatCompletionCreateParamsStreaming,
          { signal: watchdog.signal },
        );
        watchdog.arm();
        const limit = outputLimitChars(request.maxOutputTokens);
        for await (const chunk of stream) {
          const { text, progress } = assembled.add(chunk);
          // Only content holds off the stall watchdog: keep-alive chunks (`choices: []`) do not.
          if (progress) watchdog.arm();
          if (assembled.outputChars > limit) {
            watchdog.cut();
            throw new LLMError(
              'bad_response',
              `the server sent more output than requested (over ${limit.toLocaleString('en-US')} characters for at most ` +
                `${request.maxOutputTokens.toLocaleString('en-US')} tokens): the answer was cut and not retried, since the server ignores the limit`,
              { shouldRetry: false },
            );
          }
          if (text) call.onText(text);
        }
        watchdog.check();
        return assembled.finish();
      } catch (error) {
        throw classify(error, watchdog, hide);
      } finally {
        watchdog.stop();
      }
    },

    async summarize(request: LLMRequest, call: { signal: AbortSignal }): Promise<LLMResponse> {
      const watchdog = new Watchdog(timeoutMs, call.signal);
      try {
        const completion = await client.chat.completions.create(
          { ...body(request, options.compactionModel ?? model), stream: false } as never,
          {
            signal: watchdog.signal,
          },
        );
        const choice = (completion as OpenAI.Chat.Completions.ChatCompletion).choices[0];
        const usage = (completion as OpenAI.Chat.Completions.ChatCompletion).usage;
        return {
          message: { role: 'assistant', content: choice?.message.content ?? '' },
          usage: usageOf(usage),
          finishReason: choice?.finish_reason ?? 'stop',
        };
      } catch (error) {
        throw classify(error, watchdog, hide);
      } finally {
        watchdog.stop();
      }
    },
  };
}

/**
 * Characters of output past which a stream is cut: twice the requested maximum, at 4
 * characters a token (English runs ~4, code ~3, Chinese ~1: never short of a real answer).
 */
export function outputLimitChars(maxOutputTokens: number): number {
  return Math.max(4_096, 2 * 4 * maxOutputTokens);
}

/** The server's token counts, when they are counts: a broken server's are ignored (we count ourselves). */
function usageOf(usage: { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined): LLMUsage | null {
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!usage || !count(usage.prompt_tokens) || !count(usage.completion_tokens)) return null;
  return { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens };
}

/** Collects a streamed completion: text, tool calls split over many chunks, usage. */
class Assembler {
  private text = '';
  private calls: { id: string; name: string; arguments: string }[] = [];
  private finishReason: string | null = null;
  private usage: LLMUsage | null = null;
  /** Text, tool names and arguments received so far. */
  outputChars = 0;

  /** The chunk's text, and whether it carried anything at all (content, a tool call, the end). */
  add(chunk: ChatCompletionChunk): { text: string; progress: boolean } {
    if (chunk.usage) this.usage = usageOf(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return { text: '', progress: false };
    const delta = choice.delta ?? {};
    const before = this.outputChars;
    for (const part of delta.tool_calls ?? []) {
      const index = typeof part.index === 'number' ? part.index : this.calls.length - (part.id ? 0 : 1);
      const call = (this.calls[index] ??= { id: '', name: '', arguments: '' });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      this.outputChars += (part.function?.name?.length ?? 0) + (part.function?.arguments?.length ?? 0);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const text = typeof delta.content === 'string' ? delta.content : '';
    this.text += text;
    this.outputChars += text.length;
    // A reasoning model's thinking (vLLM, DeepSeek, llama.cpp name it so) is content too: it holds
    // off the stall watchdog, and counts towards the output limit as it does towards max_tokens.
    const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
    for (const thought of [extra.reasoning_content, extra.reasoning]) if (typeof thought === 'string') this.outputChars += thought.length;
    return { text, progress: this.outputChars > before || !!choice.finish_reason };
  }

  finish(): LLMResponse {
    if (this.finishReason === null) {
      throw new LLMError('network', 'the stream ended before the model finished (no finish_reason); the connection was probably cut');
    }
    const calls = this.calls.filter(Boolean);
    const message: AssistantMessage = { role: 'assistant', content: this.text || null };
    if (calls.length)
      message.tool_calls = calls.map((c, i) => ({
        id: c.id || `call_${i}`,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      }));
    return { message, usage: this.usage, finishReason: this.finishReason };
  }
}

/** Aborts the request when the caller aborts, or when the server goes silent too long. */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  timedOut = false;
  private readonly onAbort = (): void => this.controller.abort();

  constructor(
    private readonly ms: number,
    private readonly outer: AbortSignal,
  ) {
    if (outer.aborted) this.controller.abort();
    else outer.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get userAborted(): boolean {
    return this.outer.aborted;
  }

  /** Stop the request ourselves (not a timeout, not the caller's abort). */
  cut(): void {
    clearTimeout(this.timer);
    this.controller.abort();
  }

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.ms);
  }

  /** The SDK ends a stream quietly when it is aborted: make that an error. */
  check(): void {
    if (this.userAborted) throw new LLMError('aborted', 'the request was aborted');
    if (this.timedOut) throw new LLMError('timeout', `no content from the server for ${this.ms / 1000} s`);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.onAbort);
  }
}

/** The messages servers use for a prompt that does not fit (OpenAI, vLLM, llama.cpp, Ollama, …). */
const OVERFLOW =
  /context_length_exceeded|exceed_context_size|maximum context length|context length exceeded|exceeds? (?:the )?(?:available |maximum |model'?s? )?context (?:size|length|window)|context size has been exceeded|prompt is too long|input is too long|too many tokens|reduce the length of the messages/i;

/** The URL's password and user:password, as written and decoded: what must never be shown. */
function userinfoSecrets(url: string): string[] {
  const { username, password } = new URL(url);
  if (!username && !password) return [];
  const decode = (s: string): string => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  // A user with no password is a token (https://TOKEN@host): then the user is the secret.
  const raw = password
    ? [`${username}:${password}`, password, `${decode(username)}:${decode(password)}`, decode(password)]
    : [username, decode(username)];
  return [...new Set(raw.filter(Boolean))];
}

/** The URL with its userinfo, if any, masked. */
function withoutUserinfo(url: string): string {
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return url;
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${MASKED_USERINFO}@`);
}

export function classify(error: unknown, watchdog: { userAborted: boolean; timedOut: boolean }, secret: string | Redact = ''): LLMError {
  const hide: Redact = typeof secret === 'string' ? (text) => redact(text, secret) : secret;
  if (error instanceof LLMError) return error;
  if (watchdog.userAborted || error instanceof APIUserAbortError) {
    return watchdog.timedOut
      ? new LLMError('timeout', 'the server sent no content for too long')
      : new LLMError('aborted', 'the request was aborted');
  }
  if (watchdog.timedOut) return new LLMError('timeout', 'the server sent no content for too long', { cause: error });
  if (error instanceof APIConnectionTimeoutError) return new LLMError('timeout', 'the request timed out', { cause: error });
  const message = hide(error instanceof Error ? error.message : String(error));
  const causeOf = (e: unknown): string | undefined => {
    const said = innermostCause(e);
    return said === undefined ? undefined : hide(said);
  };
  if (error instanceof APIConnectionError)
    return new LLMError('network', `the connection to the server failed (${causeOf(error) ?? message})`, { cause: error });
  if (error instanceof APIError) {
    const status = error.status;
    const code = `${(error as { code?: unknown }).code ?? ''} ${(error as { type?: unknown }).type ?? ''}`;
    if (OVERFLOW.test(`${code} ${message}`))
      return new LLMError('overflow', message, { ...(status === undefined ? {} : { status }), cause: error });
    if (status === undefined) return new LLMError('server', `the server sent an error in the stream: ${message}`, { cause: error });
    const kind: LLMErrorKind =
      status === 408
        ? 'timeout'
        : status === 429
          ? 'rate_limit'
          : status === 409 || status >= 500
            ? 'server'
            : status === 401 || status === 403
              ? 'auth'
              : 'bad_request';
    // The server's verdict wins over ours, both ways (as OpenAI's own clients do).
    const shouldRetry = shouldRetryHeader(error.headers);
    const said = shouldRetry === false ? `${message} (the server asked not to retry: x-should-retry: false)` : message;
    const hints = kind === 'rate_limit' || kind === 'server' || shouldRetry ? retryAfter(error.headers) : {};
    return new LLMError(kind, said, { status, ...hints, ...(shouldRetry === undefined ? {} : { shouldRetry }), cause: error });
  }
  if (error instanceof SyntaxError)
    return new LLMError('bad_response', `the server sent an event that is not JSON: ${message}`, { cause: error });
  // undici reports a connection cut mid-body as "terminated" / "other side closed" / ECONNRESET.
  if (/terminated|other side closed|ECONNRESET|socket hang up|EPIPE/i.test(`${message} ${causeOf(error) ?? ''}`)) {
    return new LLMError('network', `the connection was cut mid-stream (${causeOf(error) ?? message})`, { cause: error });
  }
  return new LLMError('bad_response', message, { cause: error });
}

function shouldRetryHeader(headers: Headers | undefined): boolean | undefined {
  const value = headers?.get('x-should-retry')?.trim().toLowerCase();
  return value === 'true' ? true : value === 'false' ? false : undefined;
}

function retryAfter(headers: Headers | undefined): { retryAfterMs?: number } {
  const ms = Number(headers?.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && headers?.get('retry-after-ms')) return { retryAfterMs: ms };
  const raw = headers?.get('retry-after');
  if (!raw) return {};
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return { retryAfterMs: Math.max(0, seconds * 1000) };
  const date = Date.parse(raw);
  return Number.isNaN(date) ? {} : { retryAfterMs: Math.max(0, date - Date.now()) };
}

function innermostCause(error: unknown): string | undefined {
  let cause = (error as { cause?: unknown })?.cause;
  for (let depth = 0; cause && depth < 4; depth++) {
    const code = (cause as { code?: string }).code;
    const msg = (cause as Error).message;
    const inner = (cause as { cause?: unknown }).cause;
    if (!inner) return code ? `${code}: ${msg}` : msg;
    cause = inner;
  }
  return undefined;
}

export { redact };
