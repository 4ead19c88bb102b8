/**
 * The injected view of the history, derived from messages.jsonl. A view is an immutable
 * snapshot by convention: it reads items[0, length) of arrays that only ever grow at the
 * tip, so appending is O(1), a view held by an older state stays valid, and the tokens
 * of any range are one subtraction (`cum` holds prefix sums).
 */
import type { HistoryMode } from '../events.js';
import type { ChatMessage } from './messages.js';

export interface HistoryItem {
  /** The messages.jsonl entry this item comes from (a message, or a compaction note). */
  readonly seq: number;
  readonly turn: number;
  readonly message: ChatMessage;
  readonly tokens: number;
  /** A user message the host pinned: every request carries it and no compaction replaces it. */
  readonly pinned?: true;
}

export interface HistoryView {
  readonly items: readonly HistoryItem[];
  /** cum[i] = tokens of items[0, i); cum.length >= length + 1. */
  readonly cum: readonly number[];
  readonly length: number;
  /**
   * Indices of the pinned items, ascending (those from `length` on belong to a newer view).
   * A view built by hand may leave it out: its items' `pinned` say then.
   */
  readonly pins?: readonly number[];
}

export function fromItems(items: readonly HistoryItem[]): HistoryView {
  const cum = new Array<number>(items.length + 1);
  const pins: number[] = [];
  cum[0] = 0;
  for (let i = 0; i < items.length; i++) {
    cum[i + 1] = cum[i]! + items[i]!.tokens;
    if (items[i]!.pinned) pins.push(i);
  }
  return { items: items.slice(), cum, length: items.length, pins };
}

export function appendItem(view: HistoryView, item: HistoryItem): HistoryView {
  const items = view.items as HistoryItem[];
  const cum = view.cum as number[];
  if (items.length === view.length) {
    items.push(item);
    cum.push(cum[view.length]! + item.tokens);
    const pins = view.pins as number[] | undefined;
    if (item.pinned) pins?.push(view.length);
    return { items, cum, length: view.length + 1, ...(pins ? { pins } : {}) };
  }
  // An older snapshot: copy rather than overwrite what a newer one already holds.
  return fromItems([...items.slice(0, view.length), item]);
}

export function itemAt(view: HistoryView, index: number): HistoryItem {
  if (index < 0 || index >= view.length) throw new RangeError(`history index ${index} out of range 0..${view.length - 1}`);
  return view.items[index]!;
}

export function tokensBetween(view: HistoryView, from: number, to: number): number {
  return view.cum[to]! - view.cum[from]!;
}

export function totalTokens(view: HistoryView): number {
  return view.cum[view.length]!;
}

/** Indices of the pinned items in [from, to), ascending. */
export function pinsBetween(view: HistoryView, from: number, to: number): number[] {
  const end = Math.min(to, view.length);
  const out: number[] = [];
  if (!view.pins) {
    for (let i = from; i < end; i++) if (view.items[i]!.pinned) out.push(i);
    return out;
  }
  for (const i of view.pins) {
    if (i >= end) break;
    if (i >= from) out.push(i);
  }
  return out;
}

/** Tokens of the items at `indices`. */
export function tokensOf(view: HistoryView, indices: readonly number[]): number {
  let n = 0;
  for (const i of indices) n += view.items[i]!.tokens;
  return n;
}

export function messagesBetween(view: HistoryView, from: number, to: number): ChatMessage[] {
  const out = new Array<ChatMessage>(to - from);
  for (let i = from; i < to; i++) out[i - from] = view.items[i]!.message;
  return out;
}

/** Index of the first item of `turn`, scanning back from the tip (the active turn is short). */
export function turnStartIndex(view: HistoryView, turn: number): number {
  let i = view.length;
  while (i > 0 && view.items[i - 1]!.turn >= turn) i--;
  return i;
}

export type { HistoryMode };

/** How much a request carries outside phase 1 (TurnSettings' `hybridRecent` and `recentTurns`). */
export interface CarrySettings {
  /** Messages carried in hybrid mode (at least the active turn). */
  readonly hybridRecent: number;
  /** Complete turns carried before the active one in phase 2 (0: the active turn only). */
  readonly recentTurns: number;
  /** Phase 2's first turn when its window holds still (recentWindow.ts); absent: the last recentTurns turns. */
  readonly windowFrom?: number;
}

/**
 * Which items a request carries: all of them (phase 1), the last `recentTurns` whole
 * turns and the active turn (phase 2), or the last `hybridRecent` messages and at least
 * the active turn (hybrid). A range is extended back to the user message that opens its
 * first turn: it never starts on a tool result (a call is never separated from its
 * result) nor on an assistant message (strict chat templates want a user message first).
 */
export function injectedRange(view: HistoryView, mode: HistoryMode, turn: number, carry: CarrySettings): [number, number] {
  const end = view.length;
  if (mode === 'phase1') return [0, end];
  let start = turnStartIndex(view, turn);
  if (mode === 'phase2') {
    // Whole earlier turns, by their number: a turn's items are contiguous in the view. At
    // least recentTurns of them, and all from windowFrom on when the window holds still (recentWindow.ts).
    for (let taken = 0; start > 0; taken++) {
      const previous = view.items[start - 1]!.turn;
      if (taken >= carry.recentTurns && (carry.windowFrom === undefined || previous < carry.windowFrom)) break;
      start = turnStartIndex(view, previous);
    }
  } else {
    start = Math.min(start, Math.max(0, end - carry.hybridRecent));
  }
  while (start > 0 && view.items[start]!.message.role !== 'user') start--;
  return [start, end];
}
