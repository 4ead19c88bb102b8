import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HostSpans, shapeOf } from '../../src/history/hostLine.js';
import type { ChatMessage } from '../../src/history/messages.js';

/** A turn: a question, answers that call workmem's tools or the host's (each call answered), then a text answer. */
const turn = fc.record({
  question: fc.string({ maxLength: 8 }),
  rounds: fc.array(fc.array(fc.constantFrom('write', 'compact_history', 'lookup', 'search'), { minLength: 1, maxLength: 3 }), {
    maxLength: 3,
  }),
  answer: fc.string({ maxLength: 8 }),
});

let ids = 0;
function conversationOf(turns: { question: string; rounds: string[][]; answer: string }[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const t of turns) {
    out.push({ role: 'user', content: t.question });
    for (const round of t.rounds) {
      const calls = round.map((name) => ({ id: `c${ids++}`, type: 'function' as const, function: { name, arguments: '{}' } }));
      out.push({ role: 'assistant', content: null, tool_calls: calls });
      for (const c of calls) out.push({ role: 'tool', tool_call_id: c.id, content: `done ${c.id}` });
    }
    out.push({ role: 'assistant', content: t.answer });
  }
  return out;
}

/** The first `n` messages as a host that keeps its message objects hands them over. */
const view = (messages: ChatMessage[], n: number) => ({
  length: n,
  at: (i: number) => messages[i]!,
  identity: (i: number) => messages[i],
});

/** Elements as [start, end, key]. */
const elementsOf = (spans: HostSpans) => Array.from({ length: spans.length }, (_, i) => [spans.start(i), spans.end(i), spans.key(i)]);
const mask = (text: string) => text;

describe("a host's conversation folded", () => {
  it('call after call from the last fold is the conversation folded whole', () => {
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), (turns, cuts) => {
        const messages = conversationOf(turns);
        let before: HostSpans | null = null;
        const ends = [...cuts.map((c) => c % (messages.length + 1)).sort((a, b) => a - b), messages.length];
        for (const n of ends) {
          const spans: HostSpans = HostSpans.of(view(messages, n), mask, before);
          expect(elementsOf(spans)).toEqual(elementsOf(HostSpans.of(view(messages, n), mask, null)));
          before = spans;
        }
      }),
      { numRuns: 200 },
    );
  });

  it('is folded again from the start when a message it held is another object, or the conversation is shorter', () => {
    const messages = conversationOf([
      { question: 'a', rounds: [['write']], answer: 'A' },
      { question: 'b', rounds: [['lookup', 'write']], answer: 'B' },
    ]);
    const first = HostSpans.of(view(messages, messages.length), mask, null);
    // The host replaced its second question by an answer that calls workmem's tool: another object, another fold.
    const call = { id: 'z', type: 'function' as const, function: { name: 'write', arguments: '{}' } };
    const edited = messages.map((m, i): ChatMessage => (i === 4 ? { role: 'assistant', content: null, tool_calls: [call] } : m));
    const again = HostSpans.of(view(edited, edited.length), mask, first);
    expect(elementsOf(again)).toEqual(elementsOf(HostSpans.of(view(edited, edited.length), mask, null)));
    expect(again.length).not.toBe(first.length);
    // A shorter conversation of the same objects (the host dropped its last messages).
    const shorter = HostSpans.of(view(edited, 3), mask, again);
    expect(elementsOf(shorter)).toEqual(elementsOf(HostSpans.of(view(edited, 3), mask, null)));
  });

  it('of a long conversation compares every message, keeps the keys of those that did not change, and sees a change anywhere', () => {
    const turns = Array.from({ length: 400 }, (_, t) => ({ question: `q${t}`, rounds: t % 7 ? [] : [['lookup']], answer: `a${t}` }));
    const messages = conversationOf(turns);
    const read: number[] = [];
    const converted: number[] = [];
    const counted = (list: ChatMessage[]) => ({
      length: list.length,
      at: (i: number) => (converted.push(i), list[i]!),
      // Shapes are read without converting a message (hostPrompt.ts, chatWire.ts).
      shape: (i: number) => shapeOf(list[i]!),
      identity: (i: number) => (read.push(i), list[i]),
    });
    const first = HostSpans.of(counted(messages), mask, null);
    const keys = elementsOf(first);
    read.length = 0;
    converted.length = 0;
    const grown = [...messages, { role: 'user', content: 'next' } as ChatMessage];
    const next = HostSpans.of(counted(grown), mask, first);
    // Every message of the last call is compared (a pointer compare each), none converted again but the last element's and the new.
    expect(new Set(read).size).toBe(grown.length);
    expect(elementsOf(next).slice(0, -2)).toEqual(keys.slice(0, -1));
    expect(Math.min(...converted)).toBeGreaterThanOrEqual(messages.length - 1);
    expect(elementsOf(next)).toEqual(elementsOf(HostSpans.of(view(grown, grown.length), mask, null)));
    // A question in the middle edited in place, the same length: another key there, the keys before it kept.
    for (const at of [2, 500, grown.length - 2]) {
      const index = grown.findIndex((m, i) => i >= at && m.role === 'user');
      const edited = grown.map((m, i): ChatMessage =>
        i === index ? { role: 'user', content: `${(m.content as string).slice(0, -1)}!` } : m,
      );
      const before = HostSpans.of(view(grown, grown.length), mask, null);
      for (let i = 0; i < before.length; i++) before.key(i);
      converted.length = 0;
      const again = HostSpans.of(counted(edited), mask, before);
      expect(elementsOf(again)).toEqual(elementsOf(HostSpans.of(view(edited, edited.length), mask, null)));
      const e = elementsOf(again).findIndex(([start]) => start === index);
      expect(again.key(e)).not.toBe(HostSpans.of(view(grown, grown.length), mask, null).key(e));
      expect(converted.every((i) => i >= index)).toBe(true);
    }
    // A turn taken out of the middle or put in moves every later message: folded again, as a new fold would.
    for (const at of [500, 501, 777]) {
      const removed = [
        ...grown.slice(0, at),
        ...grown.slice(at + 2),
        ...conversationOf([{ question: 'r', rounds: [['lookup']], answer: 'R' }]),
      ];
      const again = HostSpans.of(view(removed, removed.length), mask, HostSpans.of(view(grown, grown.length), mask, null));
      expect(elementsOf(again)).toEqual(elementsOf(HostSpans.of(view(removed, removed.length), mask, null)));
      const added = [
        ...grown.slice(0, at),
        { role: 'user', content: 'x' } as ChatMessage,
        { role: 'assistant', content: 'y' } as ChatMessage,
        ...grown.slice(at),
      ];
      const more = HostSpans.of(view(added, added.length), mask, HostSpans.of(view(grown, grown.length), mask, null));
      expect(elementsOf(more)).toEqual(elementsOf(HostSpans.of(view(added, added.length), mask, null)));
    }
  });
});
