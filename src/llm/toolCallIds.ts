/**
 * Tool-call ids as workmem keeps and sends them. A provider's id is short (OpenAI's
 * `call_…`, Anthropic's `toolu_…`: under 64 characters), but a broken or hostile server
 * may send any string, and an id is stored with its call and its result and sent back with
 * every later request. An id that is not 1-64 visible ASCII characters is replaced by a
 * short one derived from it: the same id always gives the same replacement, so a call and
 * its result still pair, whether the id is bounded as the response is stored or as an
 * older history is sent.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../history/messages.js';

export const MAX_TOOL_CALL_ID_CHARS = 64;
const CALL_ID = /^[\x21-\x7e]{1,64}$/;

/** `id` when it is one a provider would send; else its stable replacement (`call_` and 24 hex digits). */
export function boundCallId(id: string): string {
  if (id.length <= MAX_TOOL_CALL_ID_CHARS && CALL_ID.test(id)) return id;
  return `call_${createHash('sha256').update(id).digest('hex').slice(0, 24)}`;
}

/** The messages with every call id and result id bounded; the same array when none needed it. */
export function withBoundCallIds(messages: ChatMessage[]): ChatMessage[] {
  let out: ChatMessage[] | null = null;
  messages.forEach((message, i) => {
    const bounded = boundIdsOf(message);
    if (bounded === message) return;
    out ??= messages.slice();
    out[i] = bounded;
  });
  return out ?? messages;
}

/** The message with its call ids (or its result's) bounded; the same object when none needed it. */
export function boundIdsOf(message: ChatMessage): ChatMessage {
  if (message.role === 'tool') {
    const id = boundCallId(message.tool_call_id);
    return id === message.tool_call_id ? message : { ...message, tool_call_id: id };
  }
  if (message.role !== 'assistant' || !message.tool_calls?.some((c) => boundCallId(c.id) !== c.id)) return message;
  return { ...message, tool_calls: message.tool_calls.map((c) => ({ ...c, id: boundCallId(c.id) })) };
}
