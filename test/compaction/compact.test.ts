/**
 * compact(), the one apply path, over a store kept in memory: what a compaction needs of
 * storage is CompactionStore and nothing else, the archive and the log entry are
 * committed together, and the tokens reported are those of the range compacted. Pinned
 * messages are never archived: they stay, right after the note, and the entry names them.
 */
import type { SessionEvent } from '../../src/events.js';
import { describe, expect, it } from 'vitest';
import { compact, type CompactionDeps } from '../../src/compaction/compact.js';
import type { CompactionStore } from '../../src/compaction/store.js';
import { NOTE_PREFIX, STUB_PREFIX } from '../../src/compaction/plan.js';
import { deriveHistory, viewAfterCompaction } from '../../src/history/deriveHistory.js';
import { fromItems, tokensBetween, totalTokens, type HistoryItem, type HistoryView } from '../../src/history/historyView.js';
import type { ChatMessage } from '../../src/history/messages.js';
import type { CompactionEntry, LogEntry } from '../../src/storage/messageLog.js';
import { loadTokenCounter } from '../../src/tokens/tokens.js';

class MemoryStore implements CompactionStore {
  readonly files = new Map<string, string>();
  readonly calls: string[] = [];
  private seq: number;
  constructor(private view: HistoryView) {
    this.seq = view.length ? view.items[view.length - 1]!.seq + 1 : 0;
  }
  history(): HistoryView {
    return this.view;
  }
  async resolvePath(path: string): Promise<string> {
    return path.replace(/^working-memory\//, '');
  }
  async exists(path: string): Promise<boolean> {
    return this.files.has(path);
  }
  async commit(
    archive: { path: string; content: string; append: boolean },
    entry: Omit<CompactionEntry, 'seq' | 'ts'>,
  ): Promise<CompactionEntry> {
    const { path, content } = archive;
    this.calls.push(`commit ${path}${archive.append ? ' (append)' : ''}`);
    this.files.set(path, archive.append && this.files.has(path) ? `${this.files.get(path)}\n\n---\n\n${content}` : content);
    const full = { ...entry, seq: this.seq++, ts: 0 } as CompactionEntry;
    this.view = viewAfterCompaction(this.view, full);
    return full;
  }
}

/**
 * `turns` turns of user, assistant calling a tool, tool output (`toolWords` words), answer;
 * the user messages of the turns in `pinnedTurns` pinned, and `rules` pinned before turn 1 (turn 0).
 */
function history(turns: number, toolWords = 120, pinnedTurns: number[] = [], rules = 0): HistoryView {
  const items: HistoryItem[] = [];
  let seq = 0;
  const push = (turn: number, message: ChatMessage, tokens: number, pinned = false): void => {
    items.push({ seq: seq++, turn, message, tokens, ...(pinned ? { pinned: true as const } : {}) });
  };
  for (let r = 1; r <= rules; r++) push(0, { role: 'user', content: `rule ${r} `.repeat(10) }, 30, true);
  for (let turn = 1; turn <= turns; turn++) {
    push(turn, { role: 'user', content: `question ${turn} `.repeat(20) }, 60, pinnedTurns.includes(turn));
    push(
      turn,
      { role: 'assistant', content: '', tool_calls: [{ id: `c${turn}`, type: 'function', function: { name: 'read', arguments: '{}' } }] },
      20,
    );
    push(turn, { role: 'tool', tool_call_id: `c${turn}`, content: 'word '.repeat(toolWords) }, toolWords + 5);
    push(turn, { role: 'assistant', content: `answer ${turn} `.repeat(20) }, 60);
  }
  return fromItems(items);
}

async function deps(store: MemoryStore, summarizer: CompactionDeps['summarizer'] = null): Promise<CompactionDeps> {
  return { store, counter: await loadTokenCounter('gpt-4o'), now: () => Date.UTC(2025, 0, 2, 3, 4, 5), summarizer };
}

const signal = new AbortController().signal;

describe('compact', () => {
  it('brings a range under a budget: the archive and the entry in one commit; tokens of the range before and after', async () => {
    const view = history(8);
    const store = new MemoryStore(view);
    const before = totalTokens(view);
    const result = await compact(
      { kind: 'budget', reason: 'fallback', turn: 8, range: [0, view.length], budget: 600, keepRecentTurns: 2 },
      await deps(store),
      signal,
    );
    expect(store.calls).toEqual(['commit detail/compact-2025-01-02T03-04-05-000Z.md']);
    expect(result.files).toEqual(['working-memory/detail/compact-2025-01-02T03-04-05-000Z.md']);
    expect(result.tokensBefore).toBe(before);
    expect(result.history).toBe(store.history());
    expect(result.tokensAfter).toBe(totalTokens(result.history));
    expect(result.tokensAfter).toBeLessThan(before);
    expect(result.replaced).toBe(result.applied.changed);
    expect(result.applied.entry!.reason).toBe('fallback');
    expect(result.history.items[0]!.message.content).toContain(NOTE_PREFIX);
    // Every archived message is in the file, verbatim.
    const archived = store.files.get('detail/compact-2025-01-02T03-04-05-000Z.md')!;
    for (const item of view.items.slice(0, result.applied.archivedMessages)) expect(archived).toContain(item.message.content ?? '');
  });

  it('measures only the range it was given (the carried part of the history)', async () => {
    const view = history(8);
    const store = new MemoryStore(view);
    const range: [number, number] = [8, view.length];
    const result = await compact(
      { kind: 'budget', reason: 'overflow', turn: 8, range, budget: 300, keepRecentTurns: 1 },
      await deps(store),
      signal,
    );
    expect(result.tokensBefore).toBe(tokensBetween(view, ...range));
    expect(result.replaced).toBeGreaterThan(0);
    expect(result.tokensAfter).toBe(tokensBetween(result.history, 8, result.history.length));
    // What lies before the range is untouched.
    expect(result.history.items.slice(0, 8)).toEqual(view.items.slice(0, 8));
  });

  it('asks for a summary for the fallback but not for the horizon, which trims what no request carries', async () => {
    const asked: string[] = [];
    const summarizer: CompactionDeps['summarizer'] = async (items) => (asked.push(`${items.length}`), 'the gist');
    for (const reason of ['fallback', 'horizon'] as const) {
      const store = new MemoryStore(history(8));
      const result = await compact(
        { kind: 'budget', reason, turn: 8, range: [0, 32], budget: 600, keepRecentTurns: 2 },
        await deps(store, summarizer),
        signal,
      );
      expect(result.applied.summary).toBe(reason === 'fallback' ? 'written' : 'not asked');
    }
    expect(asked).toHaveLength(1);
  });

  it('stubs tool outputs for a target, keeping the last ones; reports each compaction, start and end, with the range own tokens', async () => {
    const store = new MemoryStore(history(4));
    const reported: SessionEvent[] = [];
    const report = { emit: (e: SessionEvent) => reported.push(e), request: 2 };
    const result = await compact(
      { kind: 'target', reason: 'llm', turn: 4, activeTurn: 4, target: 'tools', strategy: 'archive', keepRecent: 1 },
      await deps(store),
      signal,
      report,
    );
    expect(reported).toEqual([
      { type: 'compaction_start', turn: 4, request: 2, reason: 'llm', tokensBefore: result.tokensBefore },
      {
        type: 'compaction_end',
        turn: 4,
        request: 2,
        reason: 'llm',
        tokensBefore: result.tokensBefore,
        tokensAfter: result.tokensAfter,
        replaced: 3,
        files: result.files,
      },
    ]);
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    expect(result.applied.stubbed).toBe(3);
    expect(result.applied.entry!.target).toBe('tools');
    expect(result.history.items.filter((i) => i.message.role === 'tool' && i.message.content.startsWith(STUB_PREFIX))).toHaveLength(3);

    const again = await compact(
      { kind: 'target', reason: 'llm', turn: 4, activeTurn: 4, target: 'tools', strategy: 'archive', keepRecent: 1 },
      await deps(store),
      signal,
      report,
    );
    expect(again.replaced).toBe(0);
    expect(again.tokensAfter).toBe(again.tokensBefore);
    // Nothing left to do: reported as replacing nothing.
    expect(reported.slice(2).map((e) => (e.type === 'compaction_end' ? e.replaced : e.type))).toEqual(['compaction_start', 0]);
    expect(store.calls).toEqual(['commit detail/compact-2025-01-02T03-04-05-000Z.md']);
  });

  it('appends to archive_to, and picks a fresh detail/ name when the default one is taken', async () => {
    const store = new MemoryStore(history(6));
    store.files.set('detail/compact-2025-01-02T03-04-05-000Z.md', 'older');
    const d = await deps(store);
    const first = await compact(
      { kind: 'target', reason: 'manual', turn: 6, activeTurn: 7, target: 'tools', strategy: 'archive', keepRecent: 4 },
      d,
      signal,
    );
    expect(first.files).toEqual(['working-memory/detail/compact-2025-01-02T03-04-05-000Z-2.md']);
    store.files.set('archive/notes.md', 'mine');
    const second = await compact(
      {
        kind: 'target',
        reason: 'manual',
        turn: 6,
        activeTurn: 7,
        target: 'conversation',
        strategy: 'archive',
        keepRecent: 1,
        archiveTo: 'archive/notes.md',
      },
      d,
      signal,
    );
    expect(second.files).toEqual(['working-memory/archive/notes.md']);
    expect(store.files.get('archive/notes.md')).toMatch(/^mine\n\n---\n\n/);
    // Between turns (activeTurn = last + 1) every turn but the kept one is archived, the last included up to it.
    expect(second.history.items.filter((i) => i.message.role === 'user' && i.message.content.startsWith(NOTE_PREFIX))).toHaveLength(1);
    expect(second.history.items.at(-1)!.turn).toBe(6);
  });
});

/** The log a view and a store's compaction entries stand for: deriving it again must give the store's view. */
function logOf(view: HistoryView, entries: readonly CompactionEntry[]): LogEntry[] {
  const messages = view.items.map((i) => ({
    type: 'message' as const,
    seq: i.seq,
    ts: 0,
    turn: i.turn,
    tokens: i.tokens,
    message: i.message,
    ...(i.pinned ? { pinned: true as const } : {}),
  }));
  return [...messages, ...entries];
}

describe('compact with pinned messages', () => {
  it('never archives a pinned message: an archive keeps it after the note, its entry names it, and the log derives the same history', async () => {
    // Two rules pinned before turn 1, the task (turn 1) and a later instruction (turn 4) pinned.
    const view = history(8, 120, [1, 4], 2);
    const pinned = view.items.filter((i) => i.pinned);
    const store = new MemoryStore(view);
    const entries: CompactionEntry[] = [];
    const d = await deps(store);
    const first = await compact(
      { kind: 'target', reason: 'manual', turn: 8, activeTurn: 9, target: 'conversation', strategy: 'archive', keepRecent: 2 },
      d,
      signal,
    );
    entries.push(first.applied.entry!);
    const after = first.history.items.slice(0, first.history.length);
    // rules, task, then the note, then the turn-4 instruction, then the kept turns.
    expect(after.slice(0, 3).map((i) => i.seq)).toEqual(pinned.slice(0, 3).map((i) => i.seq));
    expect(after[3]!.message.content).toContain(NOTE_PREFIX);
    expect(after[4]).toEqual(pinned[3]);
    expect(first.applied.entry!.replaces).toEqual({
      from: view.items[3]!.seq,
      to: view.items[view.length - 9]!.seq,
      count: 6 * 4 - 1, // turns 1-6, four items each, less the task pinned at its start
      kept: [pinned[3]!.seq],
    });
    expect(first.applied.archivedMessages).toBe(6 * 4 - 2);
    // The archive holds every archived message and no pinned one.
    const archive = store.files.get('detail/compact-2025-01-02T03-04-05-000Z.md')!;
    for (const p of pinned) expect(archive).not.toContain(p.message.content);
    // The tokens after: the range less what was archived, the note added, the pinned messages still counted.
    expect(first.tokensAfter).toBe(totalTokens(first.history));

    // Again, everything but the last turn: the earlier note goes, the pinned messages stay, in their order.
    const second = await compact(
      { kind: 'target', reason: 'manual', turn: 8, activeTurn: 9, target: 'all', strategy: 'archive', keepRecent: 1 },
      d,
      signal,
    );
    entries.push(second.applied.entry!);
    const kept = second.history.items.slice(0, second.history.length).filter((i) => i.pinned);
    expect(kept).toEqual(pinned);
    expect(second.history.items.filter((i) => i.message.role === 'user' && i.message.content.startsWith(NOTE_PREFIX))).toHaveLength(1);
    // Turn numbers along the history never go down (phase 2 reads turns by scanning back).
    const turns = second.history.items.slice(0, second.history.length).map((i) => i.turn);
    expect(turns).toEqual([...turns].sort((a, b) => a - b));

    const derived = deriveHistory(logOf(view, entries));
    expect(derived.problems).toEqual([]);
    expect(derived.view.items.slice(0, derived.view.length)).toEqual(second.history.items.slice(0, second.history.length));
    expect(derived.view.pins).toEqual(second.history.pins);
  });

  it('the fallback counts only what it can remove, and a history of pinned messages and one note is left alone', async () => {
    const view = history(6, 120, [1, 2, 3], 1);
    const store = new MemoryStore(view);
    const result = await compact(
      { kind: 'budget', reason: 'fallback', turn: 6, range: [0, view.length], budget: 700, keepRecentTurns: 1 },
      await deps(store),
      signal,
    );
    expect(result.history.items.filter((i) => i.pinned)).toEqual(view.items.filter((i) => i.pinned));
    expect(result.tokensAfter).toBeLessThanOrEqual(700);

    // Only pinned messages and an earlier note before the kept turn: nothing worth a new note.
    const again = await compact(
      { kind: 'target', reason: 'manual', turn: 6, activeTurn: 7, target: 'conversation', strategy: 'archive', keepRecent: 1 },
      await deps(store),
      signal,
    );
    expect(again.replaced).toBe(0);
  });

  it('a view built by hand, without its index of pins, is read by its items: the same plan, the same history after', async () => {
    const view = history(6, 120, [2, 5], 1);
    const { pins: _, ...byHand } = view;
    const order = { kind: 'target', reason: 'manual', turn: 6, activeTurn: 7, target: 'all', strategy: 'archive', keepRecent: 1 } as const;
    const indexed = await compact(order, await deps(new MemoryStore(view)), signal);
    const read = await compact(order, await deps(new MemoryStore({ ...byHand, items: view.items.slice() })), signal);
    expect(read.applied.entry).toEqual(indexed.applied.entry);
    expect(read.history.items.slice(0, read.history.length)).toEqual(indexed.history.items.slice(0, indexed.history.length));
  });

  it('a compaction entry whose kept items are not in its range is reported, not applied', () => {
    const view = history(3);
    const entry = {
      type: 'compaction',
      seq: 100,
      ts: 0,
      turn: 3,
      reason: 'manual',
      target: 'conversation',
      strategy: 'archive',
      replaces: { from: 0, to: 3, count: 4, kept: [9] },
      note: { message: { role: 'user', content: `${NOTE_PREFIX}]` }, tokens: 10 },
      files: [],
      tokensBefore: 0,
      tokensAfter: 0,
    } satisfies CompactionEntry;
    const derived = deriveHistory(logOf(view, [entry]));
    expect(derived.problems).toEqual(['compaction 100: items kept by the compaction (seqs 9) are not all in its range']);
    expect(derived.view.length).toBe(view.length);
  });
});
