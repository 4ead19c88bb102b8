/**
 * The model behind the proxy as the exchange calls it, whatever the protocol: one streamed
 * call of a prepared request, and a failure as the client is answered and the session reads it.
 */
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { LLMError, LLMRequest } from '../llm/llm.js';
import type { Watchdog, WatchdogState } from '../llm/streamWatchdog.js';

/** What the client is answered when the upstream failed. */
export interface Failure {
  status: number;
  body: { error: { message: string; type: string; param: string | null; code: string | null } };
  headers: Record<string, string>;
  /** For the session: an overflow is compacted and the call made again. */
  error: LLMError;
}

/**
 * The model behind the proxy, in the client's protocol: one call's answer read as Chat
 * Completions chunks (the exchange reads every wire's answer so), a failure as the client is
 * answered and as the session reads it.
 */
export interface ModelUpstream<R> {
  /** One streamed call of the prepared request; `auth` replaces the proxy's key (--forward-auth). */
  stream(request: R, call: LLMRequest, auth: string | undefined, signal: AbortSignal): Promise<AsyncIterable<ChatCompletionChunk>>;
  /** The client's own request without a session (a first request, a side request), its output limit `maxOutputTokens`: one call. */
  passThrough(
    request: R,
    maxOutputTokens: number,
    auth: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<ChatCompletionChunk>>;
  /** The stall watchdog of one call: the first output within the upstream's timeout, then no longer a silence between outputs. */
  watchdog(signal: AbortSignal): Watchdog;
  /** A failed call, as the client is answered and as the session reads it (a stall its watchdog cut is a timeout). */
  failure(error: unknown, watchdog?: WatchdogState | null): Failure;
}
