/**
 * Every failure of an OpenAI-compatible request as an LLMError whose kind the turn
 * machine acts on: retry (with the server's retry-after and x-should-retry), compact and
 * retry on a context overflow (each server's wording), or fail.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { redact, type Redact } from '../secrets/redact.js';
import { withoutUserinfo } from './baseUrl.js';
import { LLMError } from './llm.js';
import type { WatchdogState } from './streamWatchdog.js';
import { OVERFLOW, headerLookup, kindOfStatus, retryAfter, shouldRetryHeader } from './errorHints.js';

export function classify(error: unknown, watchdog: WatchdogState, secret: string | Redact = '', baseURL?: string): LLMError {
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
    const hinted = status === 404 && baseURL ? `${message}${versionHint(baseURL)}` : message;
    const said = shouldRetry === false ? `${hinted} (the server asked not to retry: x-should-retry: false)` : hinted;
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

/**
 * A 404 from a base URL that ends in no version segment: most OpenAI-compatible servers
 * (vLLM, llama.cpp, Ollama, LM Studio) serve /v1/chat/completions, so the URL likely lacks /v1.
 */
function versionHint(baseURL: string): string {
  const url = new URL(baseURL);
  if (/\/v\d+[a-z]*\/?$/i.test(url.pathname)) return '';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1`;
  return ` (the base URL ${withoutUserinfo(baseURL)} has no /v1, which most OpenAI-compatible servers expect: try ${withoutUserinfo(url.toString())})`;
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
