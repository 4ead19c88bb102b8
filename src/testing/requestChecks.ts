/** What the test server refuses, as a real one would: a malformed request, or tool calls and results that do not pair. */
import type { ChatMessage } from '../history/messages.js';
import type { ChatRequest } from './wire.js';

export function checkRequest(body: unknown): string | null {
  if (!body || typeof body !== 'object') return 'the request body must be a JSON object';
  const b = body as Partial<ChatRequest>;
  if (typeof b.model !== 'string' || !b.model) return "'model' is a required property";
  if (!Array.isArray(b.messages) || b.messages.length === 0) return "'messages' must be a non-empty array";
  for (const [i, m] of b.messages.entries()) {
    if (!m || typeof m !== 'object' || !['system', 'user', 'assistant', 'tool', 'developer'].includes((m as ChatMessage).role)) {
      return `messages[${i}].role is missing or unknown`;
    }
  }
  return null;
}

/** Why OpenAI would refuse this message list's tool calls and results, or null. */
export function unpairedTools(messages: readonly ChatMessage[]): string | null {
  let open: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      const at = open.indexOf(m.tool_call_id);
      if (at < 0)
        return `Invalid parameter: messages[${i}]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`;
      open.splice(at, 1);
      continue;
    }
    if (open.length) return unanswered(open);
    open = m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [];
  }
  return open.length ? unanswered(open) : null;
}

function unanswered(ids: string[]): string {
  return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(', ')}`;
}
