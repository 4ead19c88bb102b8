/**
 * What the compaction property tests share: the random steps of a session (a chat, a few
 * tool calls, the model's compact_history), the scripted replies that play them, the tool
 * they call, and the check every message list must pass (tool calls and results together).
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { z } from 'zod';
import { ChatMessageSchema, type ChatMessage } from '../../src/history/messages.js';
import type { ScriptedReply } from '../../src/llm/scriptedModel.js';
import { defineTool } from '../../src/tools/tool.js';

export type Step =
  | { kind: 'chat'; userWords: number; replyWords: number }
  | { kind: 'tools'; calls: number; outputWords: number }
  | { kind: 'compact'; target: 'conversation' | 'tools' | 'all'; strategy: 'archive' | 'summarize'; keep: number };

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('chat' as const),
      userWords: fc.integer({ min: 3, max: 150 }),
      replyWords: fc.integer({ min: 3, max: 250 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      calls: fc.integer({ min: 1, max: 3 }),
      outputWords: fc.integer({ min: 5, max: 500 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('compact' as const),
      target: fc.constantFrom('conversation' as const, 'tools' as const, 'all' as const),
      strategy: fc.constantFrom('archive' as const, 'summarize' as const),
      keep: fc.integer({ min: 0, max: 6 }),
    }),
  },
);

export const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

/** The replies for one step, in order. */
export function repliesFor(step: Step, t: number): ScriptedReply[] {
  switch (step.kind) {
    case 'chat':
      return [{ text: `reply${t} ${words(step.replyWords, `r${t}w`)}` }];
    case 'tools':
      return [
        ...Array.from({ length: step.calls }, (_, c) => ({
          toolCalls: [{ id: `call_${t}_${c}`, name: 'probe', arguments: { turn: t, call: c, words: step.outputWords } }],
        })),
        { text: `tools${t} done` },
      ];
    case 'compact':
      return [
        {
          toolCalls: [
            {
              id: `call_${t}_c`,
              name: 'compact_history',
              arguments: { target: step.target, strategy: step.strategy, keep_recent: step.keep },
            },
          ],
        },
        { text: `compacted${t}` },
      ];
  }
}

/** The tool the steps call: some output of the size asked. */
export function probeTool() {
  return defineTool({
    name: 'probe',
    description: 'Returns some output',
    parameters: z.object({ turn: z.number(), call: z.number(), words: z.number() }),
    execute: ({ turn, call, words: n }) => `out${turn}.${call} ${words(n, `o${turn}.${call}w`)}`,
  });
}

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
