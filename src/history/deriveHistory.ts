/**
 * The injected history is derived from messages.jsonl: messages in order, with each
 * compaction entry replacing the items it names (the pinned ones it names as kept stay).
 * The live session applies compactions through the same function, so resume derives
 * exactly what the live session had.
 */
import { fromItems, type HistoryItem, type HistoryView } from './historyView.js';
import { HostLine, OwnToolNaming, TOOL_NAMES_EVENT } from './hostLine.js';
import type { CompactionEntry, LogEntry, RepairEntry } from '../storage/messageLog.js';

export interface DerivedHistory {
  view: HistoryView;
  /** The messages of the log's current branch as a host holds them (hostLine.ts): what a host's loop is matched against. */
  line: HostLine;
  lastTurn: number;
  lastSeq: number;
  messageCount: number;
  /** Compaction and repair entries that could not be applied (their anchors were damaged). */
  problems: string[];
}

/** `mask`: the log's masking of secrets, for the keys of the host line (a log's copy is masked already). */
export function deriveHistory(entries: readonly LogEntry[], mask?: (text: string) => string): DerivedHistory {
  let items: HistoryItem[] = [];
  const problems: string[] = [];
  let lastTurn = 0;
  let lastSeq = 0;
  let messageCount = 0;
  const line = new HostLine(mask);
  const branches = new Branches();
  for (const entry of entries) {
    lastSeq = Math.max(lastSeq, entry.seq);
    lastTurn = Math.max(lastTurn, entry.turn);
    if (entry.type === 'message') {
      messageCount++;
      line.add(entry.message, entry.seq, entry.print);
      items.push({
        seq: entry.seq,
        turn: entry.turn,
        message: entry.message,
        tokens: entry.tokens,
        ...(entry.pinned ? { pinned: true as const } : {}),
      });
    } else if (entry.type === 'compaction') {
      const result = applyCompaction(items, entry);
      if (typeof result === 'string') problems.push(`compaction ${entry.seq}: ${result}`);
      else {
        branches.compacted(items, entry);
        items = result;
      }
    } else if (entry.type === 'repair') {
      const result = applyRepair(items, entry);
      if (typeof result === 'string') problems.push(`repair ${entry.seq}: ${result}`);
      else {
        if (entry.answer) branches.covers.set(entry.seq, branches.top(entry.answer.after));
        items = result;
      }
    } else if (entry.type === 'event' && entry.name === TOOL_NAMES_EVENT) {
      line.naming = namingOf(entry.data);
    } else if (entry.type === 'branch') {
      let kept = line.length;
      while (kept > 0 && line.elements[kept - 1]!.at[0]! > entry.after) kept--;
      line.truncate(kept);
      items = branches.follow(items, entry.after);
    }
  }
  return { view: fromItems(items), line, lastTurn, lastSeq, messageCount, problems };
}

/** A TOOL_NAMES_EVENT's naming; one it cannot read leaves the default. */
export function namingOf(data: Record<string, unknown>): OwnToolNaming {
  const { prefix, own } = data as { prefix?: unknown; own?: unknown };
  if (typeof prefix !== 'string' || !Array.isArray(own) || !own.every((n) => typeof n === 'string')) return OwnToolNaming.DEFAULT;
  return new OwnToolNaming(prefix, new Set(own as string[]));
}

/**
 * What following a branch needs: the newest message each compaction note and repaired
 * result stands for, and the items each note replaced. A note that stands only for
 * messages the branch keeps stays; one that reaches past the branch point gives back the
 * kept items it replaced, as they were (they are in the log: nothing is lost).
 */
class Branches {
  /** An item that is not a message (a note, a repaired result): the newest message seq it stands for. */
  readonly covers = new Map<number, number>();
  private readonly replaced = new Map<number, HistoryItem[]>();

  top(seq: number): number {
    return this.covers.get(seq) ?? seq;
  }

  /** Before `entry` applies to `items` (it applied: its range is there). */
  compacted(items: readonly HistoryItem[], entry: CompactionEntry): void {
    if (!entry.replaces || !entry.note) return;
    const start = items.findIndex((item) => item.seq === entry.replaces!.from);
    const gone = items.slice(start, start + entry.replaces.count);
    this.replaced.set(entry.seq, gone);
    this.covers.set(entry.seq, Math.max(...gone.map((item) => this.top(item.seq))));
  }

  follow(items: readonly HistoryItem[], after: number): HistoryItem[] {
    const out: HistoryItem[] = [];
    const keep = (item: HistoryItem): void => {
      if (this.top(item.seq) <= after) out.push(item);
      else for (const inner of this.replaced.get(item.seq) ?? []) keep(inner);
    };
    for (const item of items) keep(item);
    return out;
  }
}

/** The items after `entry`, or why it cannot apply. Never mutates `items`. */
export function applyCompaction(items: readonly HistoryItem[], entry: CompactionEntry): HistoryItem[] | string {
  let next = items.slice();
  if (entry.stubs?.length) {
    const stubs = new Map(entry.stubs.map((s) => [s.seq, s]));
    next = next.map((item) => {
      const stub = stubs.get(item.seq);
      return stub ? { ...item, message: { ...item.message, content: stub.content } as HistoryItem['message'], tokens: stub.tokens } : item;
    });
  }
  if (entry.replaces) {
    const { from, to, count } = entry.replaces;
    const start = next.findIndex((item) => item.seq === from);
    if (start < 0) return `replaced range starts at seq ${from}, which is not in the history`;
    let end = start;
    while (end < next.length && next[end]!.seq !== to) end++;
    if (end >= next.length) return `replaced range ends at seq ${to}, which does not follow seq ${from}`;
    if (end - start + 1 !== count) return `replaced range holds ${end - start + 1} items, the entry says ${count}`;
    // Pinned items in the range stay, right after the note, in their order.
    const keep = new Set(entry.replaces.kept ?? []);
    const kept = next.slice(start, end + 1).filter((item) => keep.has(item.seq));
    if (kept.length !== keep.size) return `items kept by the compaction (seqs ${[...keep].join(', ')}) are not all in its range`;
    // The note stands where the oldest replaced item stood, and takes its turn, so turn
    // numbers along the history never go down.
    const note = entry.note ? [{ seq: entry.seq, turn: next[start]!.turn, message: entry.note.message, tokens: entry.note.tokens }] : [];
    next.splice(start, end - start + 1, ...note, ...kept);
  }
  return next;
}

/** The items after a repair entry, or why it cannot apply. Never mutates `items`. */
export function applyRepair(items: readonly HistoryItem[], entry: RepairEntry): HistoryItem[] | string {
  if (entry.setAside !== undefined) {
    const at = items.findIndex((item) => item.seq === entry.setAside);
    return at < 0 ? `seq ${entry.setAside} is not in the history` : [...items.slice(0, at), ...items.slice(at + 1)];
  }
  const answer = entry.answer!;
  const at = items.findIndex((item) => item.seq === answer.after);
  if (at < 0) return `seq ${answer.after} is not in the history`;
  const item = { seq: entry.seq, turn: items[at]!.turn, message: answer.message, tokens: answer.tokens };
  return [...items.slice(0, at + 1), item, ...items.slice(at + 1)];
}

export function viewAfterCompaction(view: HistoryView, entry: CompactionEntry): HistoryView {
  const result = applyCompaction(view.items.slice(0, view.length), entry);
  if (typeof result === 'string') throw new Error(`compaction ${entry.seq} cannot apply: ${result}`);
  return fromItems(result);
}
