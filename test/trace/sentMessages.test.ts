/**
 * The trace's record of what each request sent keeps what it needs to trace the next one,
 * not every message of the session: once a compaction took messages out of the history,
 * what was traced of them is let go (a 10,000-turn soak grew ~25 KB a turn by keeping the
 * memory writes' arguments of every turn). Messages still in the history are not traced twice.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/history/messages.js';
import { SentMessages } from '../../src/trace/sentMessages.js';

type Item = { seq: number; turn: number; tokens: number; message: ChatMessage };
const gc = (globalThis as { gc?: () => void }).gc!;

function request(sent: SentMessages, items: Item[], turn: number) {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are workmem.' }, ...items.map((i) => i.message)];
  return sent.records(
    {
      turn,
      request: 1,
      mode: 'phase1',
      prompt: { messages, range: [0, items.length], tokens: { total: 1 } },
      history: { items, length: items.length },
      base: null,
      statics: {},
    },
    turn,
  );
}

/** 200 turns whose every request carries the whole history so far; the messages' WeakRefs in `archived`. */
async function traceEarly(sent: SentMessages, archived: WeakRef<ChatMessage>[]): Promise<number> {
  const early: Item[] = [];
  let seq = 0;
  for (let t = 1; t <= 200; t++) {
    const message: ChatMessage = { role: 'user', content: `message ${t} ${'x'.repeat(2000)}` };
    archived.push(new WeakRef(message));
    early.push({ seq: ++seq, turn: t, tokens: 500, message });
    const records = request(sent, early, t);
    // Only the new message's body is traced; those before it were traced by earlier requests.
    expect(records.filter((r) => r.k === 'message').map((r) => (r as { seq: number }).seq)).toEqual([seq]);
  }
  return seq;
}

describe('the trace of what requests sent', () => {
  it('lets go of the messages a compaction archived, and traces each message in the history once', async () => {
    const sent = new SentMessages();
    const archived: WeakRef<ChatMessage>[] = [];
    // In an async function of its own: once it has returned, nothing of its frame holds the early messages
    // (a closure called inline may be compiled into this test's frame, which lives across the awaits below).
    let seq = await traceEarly(sent, archived);
    // A compaction: the history is now a summary and what follows it.
    const later: Item[] = [{ seq: ++seq, turn: 200, tokens: 50, message: { role: 'user', content: 'Summary of turns 1–200.' } }];
    for (let t = 201; t <= 210; t++) {
      later.push({ seq: ++seq, turn: t, tokens: 5, message: { role: 'user', content: `message ${t}` } });
      request(sent, later, t);
    }
    // A few rounds: one full collection does not always clear every WeakRef (it failed once in ~20 suite runs),
    // and deref() keeps its target to the end of the job, so each round starts from a new one.
    let held = archived.length;
    for (let round = 0; round < 5 && held > 0; round++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      held = archived.filter((ref) => ref.deref() !== undefined).length;
    }
    expect(held, 'archived messages still held by the trace').toBe(0);
    // The messages still in the history are not traced again.
    expect(request(sent, later, 211).filter((r) => r.k === 'message')).toEqual([]);
  });
});
