/**
 * What the turn machine reads of a failure: the TurnError it reports and acts on, and the
 * jitter drawn for a retry. Pure, beside the machines; the clients throw src/errors/llmError.ts.
 */
import type { TurnError } from '../src/events.js';
import { isStorageFault } from '../src/errors/storageError.js';
import { FailedRequest, LLMError } from '../src/errors/llmError.js';
import { boundErrorText } from '../src/errors/errorText.js';

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
