/**
 * A message's key: what a host's copy of a message and the log's copy agree on, whatever
 * each side did to it since — the log keeps secrets masked, cut answers and capped tool
 * outputs; a host keeps what its framework rebuilt (arguments re-serialised, ids as given).
 * A user message by its text, an assistant message by its tool calls' ids (by its text when
 * it made none), a tool result by the call it answers; texts as the log masks them.
 */
import type { ChatMessage } from './messages.js';

/** Texts longer than this are keyed by their start: a cut answer keeps at least that much. */
const KEYED_CHARS = 4096;

/** `mask` is the log's masking of secrets (a log's own copy is masked already). */
export function messageKey(message: ChatMessage, mask: (text: string) => string = (text) => text): string {
  switch (message.role) {
    case 'user':
      return `u:${hash(mask(message.content))}`;
    case 'assistant':
      return message.tool_calls?.length
        ? `a:${message.tool_calls.map((c) => c.id).join(',')}`
        : `a:${hash(mask(message.content ?? '').slice(0, KEYED_CHARS))}`;
    case 'tool':
      return `t:${message.tool_call_id}`;
    case 'system':
      return `s:${hash(mask(message.content))}`;
  }
}

/** FNV-1a, 32 bits, as 8 hex digits: a key, not a digest (a collision only makes a host's message look known). */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0') + text.length.toString(36);
}
