/**
 * A host's loop in its simplest form, for tests of what a door's session does: the host
 * holds the messages, calls `llm` with the request the HostLoop prepares, and has workmem's
 * own tools run (it has none of its own).
 */
import type { LLM } from '../../src/llm/llm.js';
import type { HostLoop, HostMessage } from '../../src/session/hostLoop.js';

/** Each of `prompts` as a user turn through `loop`, answered by `llm`. */
export async function hostTurns(loop: HostLoop, llm: LLM, prompts: readonly string[]): Promise<void> {
  const messages: HostMessage[] = [];
  for (const text of prompts) {
    messages.push({ role: 'user', content: text });
    for (;;) {
      const call = await loop.prepare({ messages, tools: [] });
      const response = await llm.complete(call.request, { signal: new AbortController().signal, onText: call.text });
      await call.answer(response);
      messages.push(response.message);
      const calls = response.message.role === 'assistant' ? (response.message.tool_calls ?? []) : [];
      if (!calls.length) break;
      for (const r of await loop.runTools(calls)) messages.push({ role: 'tool', tool_call_id: r.callId, content: r.content });
    }
  }
}
