/**
 * The model behind the proxy: any OpenAI-compatible base URL, called with the official
 * SDK (its own retries off: a client retries, the session compacts an overflow). Its key
 * comes from the proxy's environment, or with --forward-auth from the client's request.
 * A failure becomes what the client is answered — the upstream's status and an
 * OpenAI-shaped body, secrets masked — and the LLMError the session acts on.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { LLMError } from '../llm/llm.js';
import { classify } from '../llm/openaiErrors.js';
import { Watchdog, type WatchdogState } from '../llm/streamWatchdog.js';
import type { Redact } from '../secrets/redact.js';

export interface UpstreamOptions {
  baseURL: string;
  /** From the proxy's environment (OPENAI_API_KEY); absent for a server that needs none. */
  apiKey?: string;
  /** Longest wait for the upstream's first output, and between its outputs once it flows (keep-alives, empty deltas and `: ping` comments are not output). */
  timeoutMs: number;
}

/** What the client is answered when the upstream failed. */
export interface Failure {
  status: number;
  body: { error: { message: string; type: string; param: string | null; code: string | null } };
  headers: Record<string, string>;
  /** For the session: an overflow is compacted and the call made again. */
  error: LLMError;
}

export class Upstream {
  private readonly client: OpenAI;

  constructor(
    readonly options: UpstreamOptions,
    private readonly hide: Redact,
  ) {
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey || 'no-key-needed',
      maxRetries: 0,
      // The watchdog's limit (watchdog()) is the one that counts; the SDK's, until the headers, backs it up.
      timeout: Math.min(options.timeoutMs + 1_000, 2 ** 31 - 1),
      logLevel: 'off',
    });
  }

  /** The stall watchdog of one call: the first output within timeoutMs, then no more than timeoutMs between outputs. */
  watchdog(signal: AbortSignal): Watchdog {
    const ms = this.options.timeoutMs;
    return new Watchdog(ms, signal, { baseMs: ms, msPerPromptToken: 0, promptTokens: 0, ms });
  }

  /** One streamed completion; `auth` replaces the proxy's key (--forward-auth). */
  async stream(body: Record<string, unknown>, auth: string | undefined, signal: AbortSignal): Promise<AsyncIterable<ChatCompletionChunk>> {
    return (await this.client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } } as never, {
      signal,
      ...(auth ? { headers: { Authorization: auth } } : {}),
    })) as unknown as AsyncIterable<ChatCompletionChunk>;
  }

  /** GET /models, passed through: the upstream's status and body. */
  async models(auth: string | undefined, signal: AbortSignal): Promise<{ status: number; type: string; body: string }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const key = auth ?? (this.options.apiKey ? `Bearer ${this.options.apiKey}` : undefined);
    if (key) headers.authorization = key;
    const response = await fetch(`${this.options.baseURL.replace(/\/+$/, '')}/models`, {
      headers,
      signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]),
    });
    const body = await response.text();
    return { status: response.status, type: response.headers.get('content-type') ?? 'application/json', body: this.hide(body) };
  }

  /** A failed call, as the client is answered and as the session reads it (a stall its watchdog cut is a timeout). */
  failure(error: unknown, watchdog: WatchdogState | null = null): Failure {
    const llm = classify(error, watchdog ?? QUIET, this.hide);
    const said = (status: number, type: string, message: string, code: string | null = null): Failure => ({
      status,
      body: { error: { message: this.hide(message), type, param: null, code } },
      headers: {},
      error: llm,
    });
    if (error instanceof APIError && error.status !== undefined) {
      const given = (error.error ?? {}) as { message?: unknown; type?: unknown; param?: unknown; code?: unknown };
      const failure = said(
        error.status,
        typeof given.type === 'string' ? given.type : 'upstream_error',
        typeof given.message === 'string' ? given.message : llm.message,
        typeof given.code === 'string' ? given.code : null,
      );
      failure.body.error.param = typeof given.param === 'string' ? given.param : null;
      const retryAfter = (error.headers as Headers | undefined)?.get?.('retry-after');
      if (retryAfter) failure.headers['retry-after'] = retryAfter;
      return failure;
    }
    if (error instanceof APIConnectionTimeoutError || llm.kind === 'timeout')
      return said(504, 'upstream_timeout', `the upstream timed out: ${llm.message}`);
    if (error instanceof APIConnectionError) return said(502, 'upstream_error', `the upstream could not be reached: ${llm.message}`);
    if (error instanceof APIUserAbortError) return said(499, 'aborted', 'the client went away');
    return said(502, 'upstream_error', `the upstream's answer could not be read: ${llm.message}`);
  }
}

/** A failure read without a call's watchdog (the model list): the SDK's timeout, and the client's disconnect. */
const QUIET: WatchdogState = {
  userAborted: false,
  timedOut: false,
  timeoutError: () => new LLMError('timeout', 'the upstream timed out'),
};
