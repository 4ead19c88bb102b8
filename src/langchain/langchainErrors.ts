/**
 * A failed model call of a LangChain agent as an LLMError whose kind the session acts on:
 * above all a context overflow, which is compacted and the call made again. LangChain's chat
 * models say an overflow with ContextOverflowError (ChatOpenAI, ChatAnthropic), or in the
 * provider's words; a provider's error keeps its HTTP status and headers.
 */
import { ContextOverflowError } from '@langchain/core/errors';
import { LLMError } from '../llm/llm.js';
import { OVERFLOW, headerLookup, kindOfStatus, retryAfter } from '../llm/errorHints.js';
import type { Redact } from '../secrets/redact.js';

export function classifyLangChain(error: unknown, hide: Redact): LLMError {
  if (error instanceof LLMError) return error;
  const said = (error ?? {}) as { name?: unknown; status?: unknown; code?: unknown; headers?: unknown; message?: unknown };
  const message = hide(typeof said.message === 'string' ? said.message : String(error));
  const status = typeof said.status === 'number' ? said.status : undefined;
  const withStatus = status === undefined ? {} : { status };
  if (ContextOverflowError.isInstance(error) || OVERFLOW.test(`${String(said.code ?? '')} ${message}`))
    return new LLMError('overflow', message, { ...withStatus, cause: error });
  if (said.name === 'AbortError' || said.name === 'ModelAbortError')
    return new LLMError('aborted', 'the request was aborted', { cause: error });
  if (said.name === 'TimeoutError') return new LLMError('timeout', message, { cause: error });
  if (status === undefined) return new LLMError('bad_response', message, { cause: error });
  const kind = kindOfStatus(status);
  const hints = kind === 'rate_limit' || kind === 'server' ? retryAfter(headerLookup(said.headers as Headers | undefined)) : {};
  return new LLMError(kind, message, { status, ...hints, cause: error });
}
