/**
 * A summary prepared in the background (background.ts decides when and of what) and the one
 * question asked of it later: does it still cover history the session holds? Views change
 * (compactions, a host's branch), the log's seqs and token counts of its items do not.
 */
import type { TokenUsage } from '../events.js';
import { tokensBetween, type HistoryItem, type HistoryView } from '../history/historyView.js';
import type { CompactionPlan } from './plan.js';

/** The turns a background summary is made of: the archive of the fallback's plan, by log seqs (views change, seqs do not). */
export interface BackgroundOrder {
  /** The session's turn when it was planned. */
  turn: number;
  /** The items of the archive, pinned ones included (they stay: `kept`), as the history held them. */
  items: readonly HistoryItem[];
  /** Seqs of the pinned items among them. */
  kept: number[];
  /** Their tokens, so that a change to any of them (a stub put in place) is seen. */
  tokens: number;
  /** The turns, as a person reads them ("4-17"). */
  turns: string;
}

/** A summary made in the background, ready to swap in. */
export interface PreparedSummary extends BackgroundOrder {
  summary: string;
  /** What its model calls cost, as the server reported them (null: not reported). */
  usage: TokenUsage | null;
  ms: number;
}

/**
 * Where the summary's items are in `history`, or null when it no longer holds them as they
 * were (a compaction archived or stubbed any of them): the summary covers nothing it holds.
 */
export function coveredRange(order: BackgroundOrder, history: HistoryView): [number, number] | null {
  const first = order.items[0]!.seq;
  let from = -1;
  // The summary's items are the oldest the history holds: found near its start while they are there.
  for (let i = 0; i < history.length; i++) {
    if (history.items[i]!.seq === first) {
      from = i;
      break;
    }
  }
  if (from < 0) return null;
  const to = from + order.items.length;
  if (to > history.length) return null;
  if (history.items[to - 1]!.seq !== order.items.at(-1)!.seq) return null;
  return tokensBetween(history, from, to) === order.tokens ? [from, to] : null;
}

/** Whether a summary still covers history the session holds. */
export function stillCovers(order: BackgroundOrder, history: HistoryView): boolean {
  return coveredRange(order, history) !== null;
}

/**
 * The fallback's plan with a prepared summary, on the history as it is now: the summary's
 * turns (found by seq), and, when the fallback's own plan (`fallback`) reaches further, its
 * turns up to there too (archived with no summary of their own), and its stubs. Nothing when
 * the summary no longer covers the history.
 */
export function preparedPlan(order: BackgroundOrder, history: HistoryView, fallback: CompactionPlan): CompactionPlan {
  const range = coveredRange(order, history);
  if (!range) return { archive: null, kept: [], stubs: [] };
  const end = fallback.archive && fallback.archive[0] <= range[1] ? Math.max(range[1], fallback.archive[1]) : range[1];
  const kept: number[] = [];
  for (let i = range[0]; i < end; i++) if (history.items[i]!.pinned) kept.push(i);
  return { archive: [range[0], end], kept, stubs: fallback.stubs.filter((i) => i >= end) };
}
