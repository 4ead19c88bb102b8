/**
 * Phase 2's window of recent turns when recentTurnsStep is over 1: it keeps its first turn
 * from request to request, so the messages after the notebook stay the same and a
 * provider's cache serves them. It starts again at the last recentTurns turns:
 * - when the notebook in its place changes (everything after it is sent uncached then anyway),
 *   but for the turns after the model's last write, which stay while they fit;
 * - when holding on stops paying (rent or buy): the turns it carries beyond the last
 *   recentTurns, each request re-reading them from the cache at a tenth of their price, have
 *   cost as much as sending those last turns again uncached would; but only when the turns
 *   it drops came before the model's last memory write (else it holds on: it costs little);
 * - at the latest when it would carry more than recentTurns + recentTurnsStep - 1 earlier
 *   turns, or its turns more tokens than its budget (the request must not show the model a
 *   fuller window than phase 2 is meant to). Nearing that limit with turns after the model's
 *   last write, its requests remind the model that those turns are about to leave (`remind`);
 *   past it, when they no longer all fit, it keeps the latest of them that fit, sliding a
 *   turn a request and reminding each time, while at most LEAVING_GRACE of them have gone.
 *
 * The window is kept in the session's meta with a key of the base it was held under, so a
 * session resumed by another process (`workmem run -c`, another instance) carries on with
 * it when its notebook is the same, and sends what an uninterrupted session would.
 */
import { createHash } from 'node:crypto';
import type { PromptBase } from '../prompt/promptBuilder.js';
import type { TurnSettings } from '../settings/settings.js';
import { turnStartIndex, type HistoryView } from './historyView.js';

export interface RecentWindow {
  /** The first turn carried (0, restored: no window, only the memory block it was saved with). */
  from: number;
  /** Restored from a saved session: baseKey of the prompt base it was held under. */
  base?: string;
  /** Restored from a saved session: the memory block that base carried in its place, when it held on to an earlier one. */
  anchor?: string;
  /**
   * Held past the point it would have started again, because turns it would drop came after
   * the model's last memory write: the request carries a reminder (reason `leaving`).
   */
  remind?: { from: number; to: number };
}

/** Turns before its limit (at most half its step) a window with unrecorded turns starts reminding the model that they are about to leave. */
export const LEAVING_GRACE = 3;
/** What reading a token from the cache costs, as a share of sending it uncached (10 %, both providers' price). */
const CACHED_SHARE = 0.1;

/** What the window needs to know of the session: its history, the turn of the model's last memory write (null: none), its room. */
export interface WindowSight {
  history: HistoryView;
  lastWrite: number | null;
  /** Tokens the window's turns may hold before it starts again (the request must not show the model a fuller window than it would otherwise). */
  budget: number;
}

/**
 * The window of the next request; `notebookChanged`: its memory block differs from the
 * previous request's. `sight` lets the window weigh what it carries and hold while turns it
 * would drop are unrecorded; without it, only the limit counts.
 */
export function nextWindow(
  previous: RecentWindow | null | undefined,
  turn: number,
  notebookChanged: boolean,
  settings: Pick<TurnSettings, 'recentTurns' | 'recentTurnsStep'>,
  sight?: WindowSight,
): RecentWindow | null {
  if (settings.recentTurnsStep <= 1) return null;
  const fresh = { from: Math.max(1, turn - settings.recentTurns) };
  const most = settings.recentTurns + settings.recentTurnsStep - 1;
  // A window restored with `from` 0 is none: only its memory block was saved.
  if (!previous || previous.from < 1 || previous.from > turn) return fresh;
  if (notebookChanged) {
    // Everything after the notebook is sent uncached now, wherever the window starts: one brought
    // up to date with no write of the model's (a refresh of the held notebook) keeps the turns
    // after its last write, as many as fit, rather than dropping them unrecorded.
    if (!sight || sight.lastWrite === null) return fresh;
    const from = firstThatFits(sight, Math.max(sight.lastWrite + 1, turn - most), fresh.from);
    return from < fresh.from ? nextWindow({ from }, turn, false, settings, sight) : fresh;
  }
  const held = turn - previous.from;
  if (!sight) return held > most ? fresh : previous;
  const { history, budget } = sight;
  // Dropping turns [previous.from, fresh.from) loses nothing the model has not had the chance to record after them.
  const recorded = sight.lastWrite !== null && sight.lastWrite >= fresh.from - 1;
  // Past its limit (turns or tokens) it starts again; turns after the model's last write are kept if they fit.
  if (held > most || tooLarge(history, previous.from, budget)) {
    if (recorded) return fresh;
    const unrecorded = Math.max(previous.from, (sight.lastWrite ?? previous.from - 1) + 1);
    // They stay while they all fit, the window at its limit: the request reminds the model of them.
    const leaving = (from: number): RecentWindow => ({ from, remind: { from, to: fresh.from - 1 } });
    if (unrecorded < fresh.from && !tooLarge(history, unrecorded, budget) && turn - unrecorded <= most) return leaving(unrecorded);
    // They no longer all fit. A model that writes gets a grace: the latest of them that fit
    // stay, the window sliding a turn a request and reminding it of those about to leave,
    // while at most `grace` of them have gone (no state kept: counted from its last write).
    if (sight.lastWrite !== null) {
      const from = firstThatFits(sight, Math.max(unrecorded, turn - most), fresh.from);
      if (from < fresh.from && from - (sight.lastWrite + 1) <= graceOf(settings)) return leaving(from);
    }
    return fresh;
  }
  if (recorded) return holdingCostsMore(history, previous.from, turn, settings.recentTurns) ? fresh : stay(previous);
  // Nearing its limit with unrecorded turns in it: it holds, and the request reminds the model they are about to leave.
  // (Near in tokens: one more turn as large as its largest would pass the budget.)
  const grace = graceOf(settings);
  const near = held > most - grace || tooLarge(history, previous.from, budget - largestTurn(history, previous.from, turn));
  if (!near) return stay(previous);
  return { from: previous.from, ...(previous.base ? { base: previous.base } : {}), remind: { from: previous.from, to: fresh.from - 1 } };
}

/** Turns before its limit a window with unrecorded turns starts reminding, and of them it may let go past it, sliding (at most half its step). */
function graceOf(settings: Pick<TurnSettings, 'recentTurnsStep'>): number {
  return Math.min(LEAVING_GRACE, Math.floor((settings.recentTurnsStep - 1) / 2));
}

/** The first turn from `from` on whose turns to the end fit the budget; `end` when none before it does. */
function firstThatFits(sight: WindowSight, from: number, end: number): number {
  let first = from;
  while (first < end && tooLarge(sight.history, first, sight.budget)) first++;
  return first;
}

/** The same window, without a reminder it carried. */
function stay(window: RecentWindow): RecentWindow {
  if (!window.remind) return window;
  return { from: window.from, ...(window.base ? { base: window.base } : {}) };
}

/** The tokens of the largest whole turn in [from, turn). */
function largestTurn(history: HistoryView, from: number, turn: number): number {
  let largest = 0;
  for (let t = from; t < turn; t++)
    largest = Math.max(largest, history.cum[turnStartIndex(history, t + 1)]! - history.cum[turnStartIndex(history, t)]!);
  return largest;
}

/** Whether the turns from `from` on (the active one included) hold more than `budget` tokens. */
function tooLarge(history: HistoryView, from: number, budget: number): boolean {
  return history.cum[history.length]! - history.cum[turnStartIndex(history, from)]! > budget;
}

/**
 * Whether carrying the turns before the last `recent` ones has cost, request after request
 * from the cache, as much as sending those last turns again uncached would: one request a
 * turn, from the first turn that carried any of them.
 */
function holdingCostsMore(history: HistoryView, from: number, turn: number, recent: number): boolean {
  const start = (t: number): number => turnStartIndex(history, t);
  const keep = history.cum[start(turn)]! - history.cum[start(turn - recent)]!;
  let carried = 0;
  for (let t = from + recent + 1; t <= turn; t++) carried += history.cum[start(t - recent)]! - history.cum[start(from)]!;
  return carried * CACHED_SHARE >= keep * (1 - CACHED_SHARE);
}

/**
 * The turn of the model's last memory write, from the reminder tracker: `rounds` requests
 * were made since the one that wrote, each answered by one assistant message in the history,
 * so the write is the assistant message before those. Null when the model never wrote, or
 * the write is no longer in the view.
 */
export function lastWriteTurn(history: HistoryView, tracker: { rounds: number; updates: number }): number | null {
  if (tracker.updates === 0) return null;
  let answers = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history.items[i]!;
    if (item.message.role !== 'assistant') continue;
    if (answers++ === tracker.rounds) return item.turn;
  }
  return null;
}

/**
 * What a prompt base sends, as a key: in one process a base is the same object while the
 * notebook stays; across processes the same text is the same base.
 */
export function baseKey(base: PromptBase): string {
  const sent = [base.systemContent, base.memoryHead ?? '', base.memoryPosition ?? 'before-history', base.today ?? ''];
  return createHash('sha256').update(JSON.stringify(sent)).digest('base64url');
}

/**
 * Whether the next request's memory block in its place differs from the last one's: by what
 * it sends (a base that holds on to an earlier block is that block's), in one process as after
 * a resume, so that a memory written again with the same text holds the window in both.
 */
export function baseChanged(base: PromptBase, previous: PromptBase | null, window: RecentWindow | null | undefined): boolean {
  if (previous) {
    const [now, before] = [base.anchor ?? base, previous.anchor ?? previous];
    return now !== before && baseKey(now) !== baseKey(before);
  }
  return window?.base === undefined || window.base !== baseKey(base);
}
