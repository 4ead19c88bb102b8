/**
 * What workmem needs from a language model: one streaming completion per request.
 * The OpenAI client, the in-process scripted model and any host's own adapter
 * implement this; the turn machine owns retries, compaction and everything else.
 */
import type { LLMErrorKind, TurnError } from '../events.js';
import type { AssistantMessage, ChatMessage } from '../history/messages.js';
import type { RetryPolicy } from '../settings/settings.js';
import type { ToolSpec } from '../tools/tool.js';
import { isStorageFault } from '../errors/storageError.js';
import { boundErrorText } from '../errors/errorText.js';

export interface LLMRequest {
  messages: ChatMessage[];
  tools: readonly ToolSpec[];
  maxOutputTokens: number;
  /**
   * Where the stable parts of the request end, for a provider with explicit prompt caching
   * (Anthropic's cache_control allows 4): after the system prompt, after the working
   * memory, after the history prefix. Automatic prefix caching (OpenAI's) needs none.
   */
  cacheBreakpoints?: readonly CacheBreakpoint[];
  /** Our count of the prompt's tokens, which the wait for the first output follows (estimated when absent). */
  promptTokens?: number;
}

/** The end of a stable part: message `message`, or only its first `chars` characters. */
export interface CacheBreakpoint {
  message: number;
  chars?: number;
}

import type { TokenUsage } from '../events.js';
export type { TokenUsage };

/** Two token counts added up (the first may be missing). */
export function sumUsage(a: TokenUsage | null | undefined, b: TokenUsage): TokenUsage {
  return a ? { input: a.input + b.input, cached: a.cached + b.cached, output: a.output + b.output } : b;
}

export interface LLMUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of promptTokens, those read from the provider's prompt cache (when it says). */
  cachedPromptTokens?: number;
}

export interface LLMResponse {
  message: AssistantMessage;
  /** null when the server did not report usage; we count instead. */
  usage: LLMUsage | null;
  finishReason: string;
}

export interface LLMCallOptions {
  signal: AbortSignal;
  /** Streamed text as it arrives. */
  onText(delta: string): void;
}

export interface LLM {
  readonly model: string;
  readonly contextWindow: number;
  /** Tokens reserved for the answer: a request never exceeds window − this. */
  readonly maxOutputTokens: number;
  complete(request: LLMRequest, options: LLMCallOptions): Promise<LLMResponse>;
  /** A one-shot, non-streaming completion for summaries (may use a cheaper model). */
  summarize?(request: LLMRequest, options: { signal: AbortSignal }): Promise<LLMResponse>;
  /** The retry policy this model wants by default; session settings override it. */
  readonly retry?: Partial<RetryPolicy>;
  /** Values never to be written or reported (its API key): the session redacts them. */
  readonly secrets?: readonly string[];
}

export type { LLMErrorKind, TurnError };

/** Transient failures: retried with backoff. An empty or garbled response usually is one too. */
const RETRYABLE: ReadonlySet<LLMErrorKind> = new Set(['rate_limit', 'server', 'network', 'timeout', 'bad_response']);

export class LLMError extends Error {
  override name = 'LLMError';
  readonly kind: LLMErrorKind;
  readonly status: number | undefined;
  /** From the server's retry-after-ms or retry-after header, when it sent one. */
  readonly retryAfterMs: number | undefined;
  /** The server's own verdict (`x-should-retry`), which overrides the kind's. */
  readonly shouldRetry: boolean | undefined;

  constructor(
    kind: LLMErrorKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; shouldRetry?: boolean; cause?: unknown } = {},
  ) {
    super(boundErrorText(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.shouldRetry = options.shouldRetry;
  }

  get retryable(): boolean {
    return this.shouldRetry ?? RETRYABLE.has(this.kind);
  }
}

/**
 * A failed request as the llm actor reports it: the error, and a random draw in [0, 1)
 * for the retry's jitter. The draw is made in the actor, per failure, so that a fleet of
 * sessions does not retry in step while the turn machine stays pure.
 */
export class FailedRequest extends Error {
  override name = 'FailedRequest';
  constructor(
    readonly error: unknown,
    readonly jitter: number,
  ) {
    super(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** The jitter drawn for a failure; a failure reported without one gets the full delay. */
export function jitterOf(error: unknown): number {
  return error instanceof FailedRequest && error.jitter >= 0 && error.jitter < 1 ? error.jitter : 1;
}

export function toTurnError(error: unknown, fallbackKind: TurnError['kind'] = 'internal'): TurnError {
  if (error instanceof FailedRequest) return toTurnError(error.error, fallbackKind);
  if (error instanceof LLMError) {
    return {
      kind: error.kind,
      message: error.message,
      retryable: error.retryable,
      ...(error.status !== undefined ? { status: error.status } : {}),
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    };
  }
  if (isTurnError(error)) {
    const message = boundErrorText(error.message);
    return message === error.message ? error : { ...error, message };
  }
  const kind = isStorageFault(error) ? 'storage' : fallbackKind;
  return { kind, message: boundErrorText(error instanceof Error ? error.message : String(error)), retryable: false };
}

function isTurnError(value: unknown): value is TurnError {
  const v = value as Partial<TurnError> | null;
  return (
    !!v &&
    typeof v === 'object' &&
    !(v instanceof Error) &&
    typeof v.kind === 'string' &&
    typeof v.message === 'string' &&
    typeof v.retryable === 'boolean'
  );
}
