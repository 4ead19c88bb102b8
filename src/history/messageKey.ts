/**
 * A message's key: what a host's copy of a message and the log's copy agree on, whatever
 * each side did to it since — the log keeps secrets masked, cut answers and capped tool
 * outputs; a host keeps what its framework rebuilt (arguments re-serialised, ids as given).
 * A user message by its text, an assistant message by its tool calls' ids (by its text when
 * it made none: a framework re-serialises a call's arguments), a tool result by the call it
 * answers and the fingerprint of its text as the host sent it (the log keeps it capped, so the
 * log's copy keeps that fingerprint beside it); texts as the log masks them.
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

/** A host's tool result: the call it answers and its text's fingerprint. */
export function toolResultKey(callId: string, print: string): string {
  return `t:${callId}\u0000${print}`;
}

/** A text's fingerprint, as keys use it (the log keeps a host tool result's beside its capped copy). */
export function fingerprint(text: string): string {
  return hash(text);
}

/** A host's key against the log's: the same, or the log's made before it kept fingerprints (a result known by its call alone). */
export function sameKey(host: string, log: string): boolean {
  return host === log || (host.length > log.length && host.charCodeAt(log.length) === 0 && host.startsWith(log));
}

/** FNV-1a, 32 bits, as 8 hex digits, and the length: a key, not a digest (a collision only makes a host's message look known). */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0') + text.length.toString(36);
}
