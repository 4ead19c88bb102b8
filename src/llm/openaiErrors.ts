/**
 * Every failure of an OpenAI-compatible request as an LLMError whose kind the turn
 * machine acts on: retry (with the server's retry-after and x-should-retry), compact and
 * retry on a context overflow (each server's wording), or fail.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { redact, type Redact } from '../secrets/redact.js';
import { LLMError } from './llm.js';
import type { WatchdogState } from './streamWatchdog.js';
import { OVERFLOW, headerLookup, kindOfStatus, retryAfter, shouldRetryHeader } from './errorHints.js';

export function classify(error: unknown, watchdog: WatchdogState, secret: string | Redact = ''): LLMError {
  const hide: Redact = typeof secret === 'string' ? (text) => redact(text, secret) : secret;
  if (error instanceof LLMError) return error;
  if (watchdog.userAborted || error instanceof APIUserAbortError) {
    return watchdog.timedOut ? watchdog.timeoutError() : new LLMError('aborted', 'the request was aborted');
  }
  if (watchdog.timedOut) return watchdog.timeoutError(error);
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
    const kind = kindOfStatus(status);
    // The server's verdict wins over ours, both ways (as OpenAI's own clients do).
    const shouldRetry = shouldRetryHeader(headerLookup(error.headers));
    const said = shouldRetry === false ? `${message} (the server asked not to retry: x-should-retry: false)` : message;
    const hints = kind === 'rate_limit' || kind === 'server' || shouldRetry ? retryAfter(headerLookup(error.headers)) : {};
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
