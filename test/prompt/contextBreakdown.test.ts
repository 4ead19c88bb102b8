/**
 * The context breakdown (src/prompt/contextBreakdown.ts) against what was really sent:
 * its groups add up to each prompt_built event, the parts the event does not split
 * (detail index, <context_meta>, reminder) equal counts of the request's own text, and
 * a compaction's note in the history names the file the compaction wrote.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HistoryView } from '../../src/history/historyView.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import type { MemorySnapshot } from '../../src/memory/memoryRules.js';
import { contextBreakdown, type BreakdownSources } from '../../src/prompt/contextBreakdown.js';
import type { MemoryPosition } from '../../src/settings/settings.js';
import { collect, newSession, ofType, splitTail } from '../helpers.js';

/** A phase 1 session with a memory about the garden and one detail file, and its events. */
async function gardenSession(settings: { historyMode: 'phase1'; memoryPosition?: MemoryPosition }) {
  const llm = scriptedModel(() => ({ text: 'ok' }));
  const session = await newSession({ llm, settings });
  const events = collect(session);
  const wm = join(session.dir, 'working-memory');
  writeFileSync(join(wm, 'overview.md'), '# Working Memory\n\n## Current task\nPlan the garden.\n');
  mkdirSync(join(wm, 'detail'), { recursive: true });
  writeFileSync(join(wm, 'detail', 'roses.md'), '# Rose varieties\n\nDavid Austin, climbing roses.\n');
  return { llm, session, events };
}

describe('context breakdown', () => {
  it('adds up to each prompt_built event, splits memory and tail as sent, and finds compaction notes', async () => {
    // Pinned to phase 1: a maintained memory would switch to phase 2, where the turns not sent are not compacted by hand.
    const { llm, session, events } = await gardenSession({ historyMode: 'phase1' });

    // Before the first request: an estimate of the next one.
    const estimate = await session.nextRequest();

    const seen: { history: HistoryView; memory: MemorySnapshot }[] = [];
    session.on('prompt_built', () => seen.push({ history: session.history, memory: session.record.memory.lastSnapshot! }));
    for (let i = 1; i <= 7; i++) await session.prompt(`question ${i} about the garden: ${'roses and tulips, '.repeat(12)}`);

    const built = ofType(events, 'prompt_built');
    expect(built).toHaveLength(7);
    expect(estimate.tokens.system).toBe(built[0]!.tokens.system);
    expect(estimate.tokens.memory).toBe(built[0]!.tokens.memory);
    expect(estimate.range).toEqual([0, 0]);

    const reminders = ofType(events, 'reminder');
    expect(reminders.length).toBeGreaterThan(0); // the seventh request carries one
    const common = { counter: session.counter, language: 'en', reserveOutputTokens: 4_096, threshold: 0.75, compactions: [] } as const;
    for (const [i, event] of built.entries()) {
      const reminder = reminders.find((r) => r.turn === event.turn && r.request === event.request);
      const b = contextBreakdown({ request: event, ...seen[i]!, reminder: reminder ?? null, ...common } as BreakdownSources);
      const tokens = Object.fromEntries(b.groups.map((g) => [g.key, g.tokens]));
      expect(tokens.system).toBe(event.tokens.system);
      expect(tokens.memory! + tokens.detail_index!).toBe(event.tokens.memory);
      expect(tokens.history).toBe(event.tokens.history);
      expect(tokens.tail).toBe(event.tokens.tail);
      expect(b.total).toBe(event.tokens.total);
      // The detail index as sent, counted on its own.
      const sent = llm.requests[i]!.messages;
      const system = sent[0]!.content!;
      expect(tokens.detail_index).toBe(session.counter.text(system.slice(system.lastIndexOf('<detail_index>'))));
      expect(b.groups.find((g) => g.key === 'detail_index')!.about).toBe('1 file in detail/');
      // The tail's parts: <context_meta> as sent, and the reminder the rest.
      const tail = splitTail(sent.at(-1)!.content!);
      const parts = b.groups.find((g) => g.key === 'tail')!.parts!;
      if (reminder) {
        expect(tail.reminder).not.toBeNull();
        const meta = sent
          .at(-1)!
          .content!.slice(sent.at(-1)!.content!.lastIndexOf('\n\n<context_meta>'), sent.at(-1)!.content!.indexOf('\n\n<memory_reminder'));
        expect(parts[0]!.tokens).toBe(session.counter.text(meta));
        expect(parts[1]).toEqual({
          label: `reminder (${reminder.level}, ${reminder.reason})`,
          tokens: event.tokens.tail - parts[0]!.tokens,
        });
        expect(parts[1]!.tokens).toBeGreaterThan(50);
      } else {
        expect(tail.reminder).toBeNull();
        expect(parts).toEqual([{ label: '<context_meta>', tokens: event.tokens.tail }]);
      }
      expect([b.history.from, b.history.to]).toEqual(event.range);
      expect(b.history.lastTurn).toBe(event.turn);
      expect(b.free).toBe(session.model.contextWindow - event.tokens.total - 4_096);
      expect(b.history.marks).toEqual([]);
    }

    // A compaction: its note in the next request's history names the file it wrote.
    const result = await session.compact({ target: 'all' });
    expect(result.changed).toBeGreaterThan(0);
    await session.prompt('question 8');
    const last = ofType(events, 'prompt_built').at(-1)!;
    const b = contextBreakdown({
      request: last,
      history: session.history,
      memory: session.record.memory.lastSnapshot!,
      reminder: null,
      ...common,
    });
    expect(b.history.marks).toEqual([{ kind: 'note', index: 0, turn: 1, tokens: session.history.items[0]!.tokens, file: result.files[0] }]);
    expect(existsSync(join(session.dir, result.files[0]!))).toBe(true);
    await session.close();
  });
});

describe("context breakdown with memoryPosition 'after-history'", () => {
  it('lists the groups in the order sent (history before the memory), adds up to each event, and estimates the prefix without the memory', async () => {
    const { llm, session, events } = await gardenSession({ historyMode: 'phase1', memoryPosition: 'after-history' });
    const other = await gardenSession({ historyMode: 'phase1', memoryPosition: 'before-history' });
    const [after, before] = [await session.nextRequest(), await other.session.nextRequest()];
    await other.session.close();
    const seen: { history: HistoryView; memory: MemorySnapshot }[] = [];
    session.on('prompt_built', () => seen.push({ history: session.history, memory: session.record.memory.lastSnapshot! }));
    for (let i = 1; i <= 3; i++) await session.prompt(`question ${i} about the garden: ${'roses and tulips, '.repeat(12)}`);
    const built = ofType(events, 'prompt_built');
    expect(after.tokens.system).toBe(built[0]!.tokens.system);
    expect(after.tokens.memory).toBe(built[0]!.tokens.memory);
    // The next message carries the memory: the cacheable prefix is the system prompt (and the history, none yet).
    expect(after.tokens.cacheable).toBe(after.tokens.system);
    expect(before.tokens.cacheable).toBe(before.tokens.system + before.tokens.memory);

    const common = {
      counter: session.counter,
      language: 'en',
      reserveOutputTokens: 4_096,
      threshold: 0.75,
      compactions: [],
      memoryPosition: 'after-history',
    } as const;
    for (const [i, event] of built.entries()) {
      const b = contextBreakdown({ request: event, ...seen[i]!, reminder: null, ...common } as BreakdownSources);
      expect(b.groups.map((g) => g.key)).toEqual(['system', 'history', 'memory', 'detail_index', 'tail']);
      const tokens = Object.fromEntries(b.groups.map((g) => [g.key, g.tokens]));
      expect(tokens.system).toBe(event.tokens.system);
      expect(tokens.memory! + tokens.detail_index!).toBe(event.tokens.memory);
      expect(b.groups.reduce((n, g) => n + g.tokens, 0)).toBe(event.tokens.counted);
      // The detail index as sent (at the start of the last message), counted on its own.
      const last = llm.requests[i]!.messages.at(-1)!.content!;
      expect(tokens.detail_index).toBe(
        session.counter.text(last.slice(last.indexOf('<detail_index>'), last.indexOf('</detail_index>') + '</detail_index>'.length)),
      );
      // 'by-phase' reads a phase 1 request as 'after-history', a phase 2 one as 'before-history'.
      const byPhase = (mode: string) =>
        contextBreakdown({
          request: { ...event, mode },
          ...seen[i]!,
          reminder: null,
          ...common,
          memoryPosition: 'by-phase',
        } as BreakdownSources);
      expect(byPhase('phase1')).toEqual(b);
      expect(byPhase('phase2').groups.map((g) => g.key)).toEqual(['system', 'memory', 'detail_index', 'history', 'tail']);
    }
    await session.close();
  });
});
