/** Small pieces the telemetry's spans share: how a failure, a provider and a memory file are named. */
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import type { LLM } from '../llm/llm.js';
import { ATTR, OPERATION } from './conventions.js';

/** The memory operation each memory tool performs (semantic-conventions-genai's names). */
export const MEMORY_OPS: Record<string, string> = {
  write: OPERATION.upsertMemory,
  edit: OPERATION.updateMemory,
  remember: OPERATION.createMemory,
  recall: OPERATION.searchMemory,
  forget: OPERATION.deleteMemory,
};
/** Ids and paths are cut to this. */
export const MAX_ID = 200;

/** Ends a span as failed, with the low-cardinality kind only (a message may quote the conversation). */
export function fail(span: Span, kind: string): void {
  span.setAttribute(ATTR.errorType, kind);
  span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
  span.end();
}

/** A failure's kind (LLMError's, e.g. `overflow`, `rate_limit`), else `_OTHER`. */
export function kindOf(error: unknown): string {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' ? kind : '_OTHER';
}

/** The provider the model names (the AI SDK's `openai.chat` is `openai`), else `_OTHER`. */
export function providerOf(llm: LLM): string {
  const named = (llm as { provider?: unknown }).provider;
  if (typeof named === 'string' && named) return named.split('.')[0]!;
  return '_OTHER';
}

/** The memory file a write or edit names (its path only: the content is never read). */
export function pathOf(args: string): string | null {
  try {
    const path = (JSON.parse(args) as { path?: unknown })?.path;
    return typeof path === 'string' ? path.replace(/^\.?\/?(working-memory\/)?/, '').slice(0, MAX_ID) : null;
  } catch {
    return null;
  }
}
