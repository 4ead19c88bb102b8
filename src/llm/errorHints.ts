/**
 * What any provider's error says that the turn machine acts on, whichever client read
 * it: a prompt that does not fit (each server's wording), what a status means, and when to retry.
 */
import type { LLMErrorKind } from './llm.js';

/**
 * The messages servers use for a prompt that does not fit: OpenAI (context_length_exceeded; the
 * Responses API's "Your input exceeds the context window of this model"), Anthropic ("prompt is
 * too long: N tokens > M maximum"; "input length and `max_tokens` exceed context limit"), Google ("The input token count (N)
 * exceeds the maximum number of tokens allowed (M)"), Ollama ("the input length exceeds the
 * context length"), vLLM, llama.cpp and others.
 */
export const OVERFLOW =
  /context_length_exceeded|exceed_context_size|maximum context length|context length exceeded|exceeds? (?:the )?(?:available |maximum |model'?s? )?context (?:size|length|window)|context size has been exceeded|exceed context limit|prompt is too long|input is too long|too many tokens|reduce the length of the messages|input token count.{0,40} exceeds the maximum number of tokens/i;

/** What an HTTP status says of an error, the same for every client; `otherwise` for the 4xx that none names. */
export function kindOfStatus(status: number, otherwise: LLMErrorKind = 'bad_request'): LLMErrorKind {
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limit';
  if (status === 409 || status >= 500) return 'server';
  if (status === 401 || status === 403) return 'auth';
  return otherwise;
}

/** A header's value, case-insensitive, from either shape a client keeps them in. */
export type HeaderLookup = (name: string) => string | null | undefined;

export function headerLookup(headers: Headers | Record<string, string> | undefined): HeaderLookup {
  if (!headers) return () => undefined;
  if (typeof (headers as Headers).get === 'function') return (name) => (headers as Headers).get(name);
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return (name) => lower.get(name.toLowerCase());
}

/** The server's own verdict (`x-should-retry`), when it gave one. */
export function shouldRetryHeader(header: HeaderLookup): boolean | undefined {
  const value = header('x-should-retry')?.trim().toLowerCase();
  return value === 'true' ? true : value === 'false' ? false : undefined;
}

/** From retry-after-ms, else retry-after (seconds or an HTTP date). */
export function retryAfter(header: HeaderLookup): { retryAfterMs?: number } {
  const rawMs = header('retry-after-ms');
  const ms = Number(rawMs);
  if (rawMs && Number.isFinite(ms) && ms >= 0) return { retryAfterMs: ms };
  const raw = header('retry-after');
  if (!raw) return {};
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return { retryAfterMs: Math.max(0, seconds * 1000) };
  const date = Date.parse(raw);
  return Number.isNaN(date) ? {} : { retryAfterMs: Math.max(0, date - Date.now()) };
}
