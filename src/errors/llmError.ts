/**
 * The errors a model client throws (LLMError, with a kind the turn machine acts on) and the
 * llm actor's report of a failed request (FailedRequest, carrying the retry's jitter draw).
 * Pure: the machines read them through machines/turnErrors.ts.
 */
import type { LLMErrorKind } from '../events.js';
import { boundErrorText } from './errorText.js';

/** Transient failures: retried with backoff. An empty or garbled response usually is one too. */
const RETRYABLE: ReadonlySet<LLMErrorKind> = new Set(['rate_limit', 'server', 'network', 'timeout', 'bad_response']);

/** A failed model request, with the kind the turn machine acts on (retry, compact on overflow, or fail). */
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
