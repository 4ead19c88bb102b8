/** What the compaction property tests check of every message list: tool calls and their results stay together. */
import { expect } from 'vitest';
import { ChatMessageSchema, type ChatMessage } from '../../src/history/messages.js';

/** Every tool call is answered by its results right after it, and every result follows its call. */
export function checkPairs(messages: readonly ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    expect(ChatMessageSchema.safeParse(m).success).toBe(true);
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const ids = m.tool_calls.map((c) => c.id);
      const results = messages.slice(i + 1, i + 1 + ids.length);
      // The last assistant message of an interrupted view may still await its results.
      if (results.length === 0 && i === messages.length - 1) continue;
      expect(results.map((r) => (r.role === 'tool' ? r.tool_call_id : `<${r.role}>`))).toEqual(ids);
    }
    if (m.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && messages[j]!.role === 'tool') j--;
      const call = messages[j];
      expect(call?.role === 'assistant' && call.tool_calls?.some((c) => c.id === m.tool_call_id)).toBe(true);
    }
  }
}
