/**
 * What to compact, decided on the history view alone: pure functions, no I/O (apply.ts
 * carries a plan out). Two operations:
 * - archive whole turns (never the active one): replaced by one note;
 * - stub tool outputs: each replaced by a one-line stub.
 * Whole turns and whole outputs only, so a tool call is never separated from its result.
 * A pinned message (a user message the host pinned) is never archived: an archive keeps
 * it, and it stands right after the note (deriveHistory.applyCompaction).
 */
import { pinsBetween, tokensBetween, turnStartIndex, type HistoryView } from '../history/historyView.js';

export type CompactionTarget = 'conversation' | 'tools' | 'all';
export type CompactionStrategy = 'archive' | 'summarize';

export const NOTE_PREFIX = '[Earlier conversation compacted';
export const STUB_PREFIX = '[Tool output moved';
/** Outputs smaller than this are not worth a stub. */
const MIN_STUB_TOKENS = 60;
/** Turns holding fewer tokens than this are not worth a note (it would be longer). */
const MIN_ARCHIVE_TOKENS = 150;
/** What planForBudget expects a note and a stub to cost. */
export const NOTE_TOKENS = 80;
const STUB_TOKENS = 40;
/** Tool outputs the auto policy leaves as they are. */
export const AUTO_KEEP_TOOL_OUTPUTS = 5;

export interface CompactionPlan {
  /** Positions [from, to) of whole turns to archive (never starting or ending on a pinned message). */
  archive: [number, number] | null;
  /** Positions of the pinned messages inside `archive`: they stay, in order, after the note. */
  kept: number[];
  /** Positions of tool results to stub. */
  stubs: number[];
}

/** A run of consecutive items of one turn, or one earlier compaction note. */
export interface Block {
  start: number;
  end: number;
  tokens: number;
  isNote: boolean;
  /** Tokens of the pinned message that opens the block (0: none), which no compaction removes. */
  pinned: number;
}

const NOTHING: CompactionPlan = Object.freeze({ archive: null, kept: [], stubs: [] }) as CompactionPlan;

export function isEmptyPlan(plan: CompactionPlan): boolean {
  return !plan.archive && plan.stubs.length === 0;
}

/** Tokens an archive of the block removes. */
function removable(block: Block): number {
  return block.tokens - block.pinned;
}

/**
 * The archive of whole blocks: their span without the pinned messages at its ends, and
 * the pinned messages inside it, which stay. Null when there is nothing to archive, or
 * only one earlier note (it would only be replaced by another).
 */
function archiveOf(view: HistoryView, blocks: readonly Block[]): Pick<CompactionPlan, 'archive' | 'kept'> | null {
  const archived = blocks.filter((b) => removable(b) > 0);
  if (archived.length === 0 || (archived.length === 1 && archived[0]!.isNote)) return null;
  let start = blocks[0]!.start;
  let end = blocks.at(-1)!.end;
  while (start < end && view.items[start]!.pinned) start++;
  while (end > start && view.items[end - 1]!.pinned) end--;
  return { archive: [start, end], kept: pinsBetween(view, start, end) };
}

export function turnBlocks(view: HistoryView, from: number, to: number): Block[] {
  const blocks: Block[] = [];
  let start = from;
  for (let i = from + 1; i <= to; i++) {
    if (i === to || view.items[i]!.turn !== view.items[start]!.turn || view.items[i]!.message.role === 'user') {
      const first = view.items[start]!;
      blocks.push({
        start,
        end: i,
        tokens: tokensBetween(view, start, i),
        isNote: first.message.role === 'user' && first.message.content.startsWith(NOTE_PREFIX),
        pinned: first.pinned ? first.tokens : 0,
      });
      start = i;
    }
  }
  return blocks;
}

/** Whole turns in [from, the active turn) except the last `keepTurns` turns (pinned messages stay); null if none. */
export function planConversation(
  view: HistoryView,
  from: number,
  turn: number,
  keepTurns: number,
): Pick<CompactionPlan, 'archive' | 'kept'> | null {
  const activeStart = Math.max(from, turnStartIndex(view, turn));
  const blocks = turnBlocks(view, from, activeStart);
  let kept = 0;
  let cut = blocks.length;
  while (cut > 0 && kept < keepTurns) {
    cut--;
    // Notes and pinned messages alone are no turns of the conversation to keep.
    if (!blocks[cut]!.isNote && removable(blocks[cut]!) > 0) kept++;
  }
  if (cut === 0) return null;
  // A few short turns would grow.
  if (blocks.slice(0, cut).reduce((n, b) => n + removable(b), 0) < MIN_ARCHIVE_TOKENS) return null;
  return archiveOf(view, blocks.slice(0, cut));
}

/** Tool results in [from, to) worth stubbing, except the last `keep` of them. */
export function planToolStubs(view: HistoryView, from: number, to: number, keep: number): number[] {
  const tools: number[] = [];
  for (let i = from; i < to; i++) {
    const m = view.items[i]!.message;
    if (m.role === 'tool' && !m.content.startsWith(STUB_PREFIX)) tools.push(i);
  }
  return tools.slice(0, Math.max(0, tools.length - keep)).filter((i) => view.items[i]!.tokens >= MIN_STUB_TOKENS);
}

/**
 * For the fallback: the fewest oldest whole turns that bring the carried history under
 * `budget` while keeping the last `keepTurns` (fewer if that is not enough); then, if the
 * active turn alone is still too large, its oldest tool outputs (never the newest one).
 */
export function planForBudget(view: HistoryView, range: [number, number], turn: number, budget: number, keepTurns: number): CompactionPlan {
  const before = tokensBetween(view, range[0], range[1]);
  if (before <= budget) return NOTHING;
  const activeStart = Math.max(range[0], turnStartIndex(view, turn));
  const blocks = turnBlocks(view, range[0], activeStart);
  let chosen = 0;
  let removed = 0;
  search: for (let keep = Math.min(keepTurns, blocks.length); keep >= 0; keep--) {
    removed = 0;
    for (let n = 1; n <= blocks.length - keep; n++) {
      removed += removable(blocks[n - 1]!);
      chosen = n;
      if (before - removed + NOTE_TOKENS <= budget) break search;
    }
  }
  const planned = removed > NOTE_TOKENS ? archiveOf(view, blocks.slice(0, chosen)) : null;
  const archive = planned?.archive ?? null;
  let remaining = before - (archive ? removed - NOTE_TOKENS : 0);
  const stubs: number[] = [];
  if (remaining > budget) {
    for (const i of planToolStubs(view, activeStart, range[1], 1)) {
      if (remaining <= budget) break;
      stubs.push(i);
      remaining -= view.items[i]!.tokens - STUB_TOKENS;
    }
  }
  return { archive, kept: planned?.kept ?? [], stubs };
}

/**
 * A target's plan within [range): the old turns (all but the last `keepTurns`) unless the
 * target is tools only, then the tool outputs after them (all but the last `keepToolOutputs`)
 * unless it is the conversation only.
 */
export function planForTier(
  view: HistoryView,
  range: [number, number],
  turn: number,
  target: CompactionTarget,
  keepTurns: number,
  keepToolOutputs: number,
): CompactionPlan {
  const planned = target === 'tools' ? null : planConversation(view, range[0], turn, keepTurns);
  const archive = planned?.archive ?? null;
  const stubs = target === 'conversation' ? [] : planToolStubs(view, archive ? archive[1] : range[0], range[1], keepToolOutputs);
  return { archive, kept: planned?.kept ?? [], stubs };
}

/**
 * What compact_history (or a manual compaction) would compact for a target. Results after the
 * last answer (those of the answer that called compact_history, which the model has not seen
 * yet) are neither moved nor counted among the outputs kept: the plan is the same whether they
 * are logged already (a Session runs the calls in order) or not (a host's loop runs them).
 */
export function planForTarget(view: HistoryView, turn: number, target: CompactionTarget, keepRecent: number): CompactionPlan {
  let end = view.length;
  while (end > 0 && view.items[end - 1]!.message.role === 'tool') end--;
  return planForTier(view, [0, end], turn, target, keepRecent, keepRecent);
}

/** The compression guide's tier for a fill level (20, 40, 60 % of the window), as the "auto" policy applies it. */
export function autoTier(percent: number): CompactionTarget | null {
  if (percent >= 60) return 'all';
  if (percent >= 40) return 'conversation';
  if (percent >= 20) return 'tools';
  return null;
}
