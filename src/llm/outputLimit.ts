/**
 * A server that ignores the requested maximum output would stream forever: every client
 * cuts the stream past twice that maximum and fails the request without a retry.
 */
import { LLMError } from './llm.js';

/**
 * Characters of output past which a stream is cut: twice the requested maximum, at 4
 * characters a token (English runs ~4, code ~3, Chinese ~1: never short of a real answer).
 */
export function outputLimitChars(maxOutputTokens: number): number {
  return Math.max(4_096, 2 * 4 * maxOutputTokens);
}

/** The error of a stream cut at `limit` characters. */
export function outputOverrun(limit: number, maxOutputTokens: number): LLMError {
  return new LLMError(
    'bad_response',
    `the server sent more output than requested (over ${limit.toLocaleString('en-US')} characters for at most ` +
      `${maxOutputTokens.toLocaleString('en-US')} tokens): the answer was cut and not retried, since the server ignores the limit`,
    { shouldRetry: false },
  );
}
