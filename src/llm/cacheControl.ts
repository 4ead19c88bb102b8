/**
 * A request's cache breakpoints on the Chat Completions wire, as `cache_control` marks, for
 * a provider with explicit prompt caching behind an OpenAI-compatible endpoint (OpenRouter
 * or LiteLLM in front of Anthropic, and the test server's explicit caching). A breakpoint
 * inside a system message (its stable prompt before the memory) splits it into two system
 * messages, the first marked; inside a user or tool message (its own text before the
 * request's tail) into two text parts, the first marked; any other breakpoint marks its
 * message's last content part (its last tool call when it has no text). At most 4 are sent,
 * as Anthropic allows.
 */
import type { ChatMessage } from '../history/messages.js';
import type { CacheBreakpoint } from './llm.js';

const MARK = { type: 'ephemeral' } as const;
/** Anthropic takes at most this many breakpoints in one request. */
const MAX_MARKS = 4;

/** The messages with their breakpoints marked (new objects where marked; the others as given). */
export function withCacheControl(messages: readonly ChatMessage[], breakpoints: readonly CacheBreakpoint[]): unknown[] {
  const byMessage = new Map<number, { whole: boolean; cut: number | null }>();
  for (const b of breakpoints.slice(0, MAX_MARKS)) {
    if (b.message < 0 || b.message >= messages.length) continue;
    const at = byMessage.get(b.message) ?? { whole: false, cut: null };
    if (b.chars === undefined) at.whole = true;
    else at.cut = at.cut === null ? b.chars : Math.min(at.cut, b.chars);
    byMessage.set(b.message, at);
  }
  const out: unknown[] = [];
  messages.forEach((message, i) => {
    const at = byMessage.get(i);
    if (!at) return void out.push(message);
    const text = message.role === 'assistant' ? null : message.content;
    if (at.cut !== null && text && at.cut > 0 && at.cut < text.length) {
      if (message.role === 'system') {
        const rest = { role: 'system', content: text.slice(at.cut) };
        out.push(marked({ role: 'system', content: text.slice(0, at.cut) }), at.whole ? marked(rest) : rest);
      } else {
        const parts = [
          { type: 'text', text: text.slice(0, at.cut), cache_control: MARK },
          { type: 'text', text: text.slice(at.cut), ...(at.whole ? { cache_control: MARK } : {}) },
        ];
        out.push({ ...message, content: parts });
      }
    } else out.push(marked(message));
  });
  return out;
}

function marked(message: ChatMessage | Record<string, unknown>): Record<string, unknown> {
  const m = message as Record<string, unknown> & { content?: unknown; tool_calls?: Record<string, unknown>[] };
  if (typeof m.content === 'string' && m.content) return { ...m, content: [{ type: 'text', text: m.content, cache_control: MARK }] };
  if (Array.isArray(m.content) && m.content.length) {
    const parts = [...(m.content as Record<string, unknown>[])];
    parts[parts.length - 1] = { ...parts.at(-1)!, cache_control: MARK };
    return { ...m, content: parts };
  }
  if (m.tool_calls?.length) {
    const calls = [...m.tool_calls];
    calls[calls.length - 1] = { ...calls.at(-1)!, cache_control: MARK };
    return { ...m, tool_calls: calls };
  }
  return { ...m, cache_control: MARK };
}
