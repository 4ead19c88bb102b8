/**
 * Every failure of an AI SDK model call as an LLMError whose kind the turn machine acts on.
 * Providers throw APICallError (status, headers, body) before a stream starts, and report
 * errors inside a stream as parts whose value is the provider's own error object
 * (Anthropic's `{ type: 'overloaded_error', message }`, OpenAI's `{ message, code }`).
 */
import { LLMError, type LLMErrorKind } from '../llm/llm.js';
import { OVERFLOW, headerLookup, kindOfStatus, retryAfter, shouldRetryHeader } from '../llm/errorHints.js';
import type { Redact } from '../secrets/redact.js';
import type { WatchdogState } from '../llm/streamWatchdog.js';

/** The AI SDK marks its errors with global symbols: read them without importing the SDK. */
const marked = (error: unknown, name: string): boolean =>
  !!error && typeof error === 'object' && (error as Record<symbol, unknown>)[Symbol.for(`vercel.ai.error.${name}`)] === true;

interface APICallErrorShape extends Error {
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  isRetryable: boolean;
}

/** Anthropic's error types, and Google's statuses, that say which kind a failure is. */
const TYPE_KINDS: Record<string, LLMErrorKind> = {
  overloaded_error: 'server',
  api_error: 'server',
  rate_limit_error: 'rate_limit',
  rate_limit_exceeded: 'rate_limit',
  RESOURCE_EXHAUSTED: 'rate_limit',
  UNAVAILABLE: 'server',
  authentication_error: 'auth',
  permission_error: 'auth',
  invalid_request_error: 'bad_request',
};

export function classifyAiSdk(error: unknown, watchdog: WatchdogState, hide: Redact): LLMError {
  if (error instanceof LLMError) return error;
  if (watchdog.userAborted) return watchdog.timedOut ? watchdog.timeoutError() : new LLMError('aborted', 'the request was aborted');
  if (watchdog.timedOut) return watchdog.timeoutError(error);
  if (marked(error, 'AI_APICallError')) return fromApiCall(error as APICallErrorShape, hide);
  if (marked(error, 'AI_JSONParseError') || marked(error, 'AI_TypeValidationError') || marked(error, 'AI_InvalidResponseDataError'))
    return new LLMError('bad_response', `the server sent a response the provider could not read: ${hide(messageOf(error))}`, {
      cause: error,
    });
  if (error instanceof Error) {
    const message = hide(error.message);
    const cause = hide(String((error.cause as Error | undefined)?.message ?? ''));
    if (/terminated|other side closed|ECONNRESET|ECONNREFUSED|socket hang up|EPIPE|fetch failed/i.test(`${message} ${cause}`))
      return new LLMError('network', `the connection to the server failed (${cause || message})`, { cause: error });
    if (OVERFLOW.test(message)) return new LLMError('overflow', message, { cause: error });
    return new LLMError('bad_response', message, { cause: error });
  }
  // An error part inside the stream: the provider's own error object.
  const said = error && typeof error === 'object' ? (error as { type?: unknown; code?: unknown; status?: unknown }) : {};
  const message = hide(messageOf(error));
  const words = `${String(said.type ?? '')} ${String(said.code ?? '')} ${String(said.status ?? '')} ${message}`;
  if (OVERFLOW.test(words)) return new LLMError('overflow', message, { cause: error });
  const kind = [said.type, said.code, said.status].map((v) => TYPE_KINDS[String(v)]).find(Boolean) ?? 'server';
  return new LLMError(kind, `the server sent an error in the stream: ${message}`, { cause: error });
}

function fromApiCall(error: APICallErrorShape, hide: Redact): LLMError {
  const status = error.statusCode;
  const body = error.responseBody ?? '';
  const message = hide(error.message || body);
  if (OVERFLOW.test(`${message} ${body}`))
    return new LLMError('overflow', message, { ...(status === undefined ? {} : { status }), cause: error });
  if (status === undefined) {
    // No status: the request never got an answer (the SDK wraps fetch's failure).
    const cause = hide(String((error.cause as Error | undefined)?.message ?? ''));
    return new LLMError('network', `the connection to the server failed (${cause || message})`, { cause: error });
  }
  const typed = /"(?:type|status|code)"\s*:\s*"(\w+)"/g;
  const bodyKind = [...body.matchAll(typed)].map((m) => TYPE_KINDS[m[1]!]).find((k) => k && k !== 'bad_request');
  const kind: LLMErrorKind = kindOfStatus(status, bodyKind ?? 'bad_request');
  // Anthropic's 529 and Google's 503 say the model is overloaded: a wait, like a rate limit.
  const overloaded = status === 529 || /overloaded/i.test(`${message} ${body}`);
  const header = headerLookup(error.responseHeaders);
  const shouldRetry = shouldRetryHeader(header);
  const said = `${overloaded && !/overloaded/i.test(message) ? 'the model is overloaded: ' : ''}${message}${
    shouldRetry === false ? ' (the server asked not to retry: x-should-retry: false)' : ''
  }`;
  const hints = kind === 'rate_limit' || kind === 'server' || shouldRetry ? retryAfter(header) : {};
  return new LLMError(kind, said, { status, ...hints, ...(shouldRetry === undefined ? {} : { shouldRetry }), cause: error });
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === 'object') {
    const m = (error as { message?: unknown }).message;
    if (typeof m === 'string') return m;
    try {
      return JSON.stringify(error);
    } catch {
      return String(error);
    }
  }
  return String(error);
}
