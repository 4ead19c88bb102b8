/**
 * The reminder tracker (docs/design.md §5): counts LLM requests since the model last wrote
 * overview.md and decides when to remind it. Pure functions over a small serialisable
 * state, so the turn machine can run them in `assign` and the session can persist them.
 */
import type { ReminderLevel, ReminderReason } from '../events.js';
export interface ReminderConfig {
  enabled: boolean;
  /** Remind when more rounds than this have passed without an update. */
  maxRounds: number;
  /** No reminder before this many rounds. */
  minRounds: number;
  /** Remind early (after minRounds) when the context is fuller than this, in percent. */
  tokenThreshold: number;
}

export const DEFAULT_REMINDER_CONFIG: ReminderConfig = { enabled: true, maxRounds: 5, minRounds: 3, tokenThreshold: 70 };

export interface TrackerState {
  /** LLM requests since the model last wrote overview.md. */
  rounds: number;
  /** Reminders shown since the last update that the model did not act on. */
  ignored: number;
  remindedSinceUpdate: boolean;
  /** Set by compaction: remind on the very next request. */
  forceNext: boolean;
  reminders: number;
  updates: number;
  lastUpdateAt: number | null;
}

export const INITIAL_TRACKER: TrackerState = {
  rounds: 0,
  ignored: 0,
  remindedSinceUpdate: false,
  forceNext: false,
  reminders: 0,
  updates: 0,
  lastUpdateAt: null,
};

export type { ReminderLevel, ReminderReason };

export interface ReminderDue {
  level: ReminderLevel;
  reason: ReminderReason;
  rounds: number;
  tokensPercent: number;
  /** reason 'leaving': the turns about to leave what requests carry (first and last). */
  leaving?: { from: number; to: number };
}

/** What the request knows beyond the tracker: turns about to leave phase 2's window, and whether the rounds rule applies. */
export interface RoundContext {
  /** Turns the next window would drop that came after the model's last memory write. */
  leaving?: { from: number; to: number };
  /** false: no reminder for rounds alone (phase 2's held window reminds when turns leave instead). */
  byRounds?: boolean;
}

const LEVELS: readonly ReminderLevel[] = ['gentle', 'firm', 'urgent'];
/** Above this share of the window a reminder is one step stronger (docs/design.md §5). */
const ESCALATE_ABOVE_PERCENT = 50;

/** One LLM request is about to be made: count it and decide whether to remind. */
export function checkRound(
  state: TrackerState,
  tokensPercent: number,
  config: ReminderConfig,
  context: RoundContext = {},
): { state: TrackerState; due: ReminderDue | null } {
  const rounds = state.rounds + 1;
  const counted = { ...state, rounds };
  if (!config.enabled) return { state: counted, due: null };

  let reason: ReminderReason | null = null;
  if (state.forceNext) reason = 'compaction';
  else if (context.leaving) reason = 'leaving';
  else if (rounds < config.minRounds) reason = null;
  else if (rounds > config.maxRounds && context.byRounds !== false) reason = 'rounds';
  else if (tokensPercent > config.tokenThreshold && rounds > config.minRounds) reason = 'tokens';
  if (reason === null) return { state: counted, due: null };

  const ignored = state.remindedSinceUpdate ? state.ignored + 1 : state.ignored;
  const step = Math.min(LEVELS.length - 1, ignored + (tokensPercent > ESCALATE_ABOVE_PERCENT ? 1 : 0));
  return {
    state: { ...counted, ignored, remindedSinceUpdate: true, forceNext: false, reminders: state.reminders + 1 },
    due: { level: LEVELS[step]!, reason, rounds, tokensPercent, ...(reason === 'leaving' ? { leaving: context.leaving! } : {}) },
  };
}

/** The model wrote overview.md. */
export function markUpdated(state: TrackerState, now: number): TrackerState {
  return { ...state, rounds: 0, ignored: 0, remindedSinceUpdate: false, forceNext: false, updates: state.updates + 1, lastUpdateAt: now };
}

/** After a compaction the model should record what it lost: remind on the next request. */
export function remindNextRequest(state: TrackerState): TrackerState {
  return { ...state, forceNext: true };
}

/** What the log says about memory updates, for reconciling a tracker read back after a crash. */
export interface TrackerFacts {
  /** memory_updated events in the log. */
  updates: number;
  lastUpdateAt: number | null;
  /** Model responses logged since the last of them (each is one request). */
  requestsSinceUpdate: number;
}

/**
 * The tracker is written behind the log, so after a crash it may miss the last requests
 * or memory updates. The log is the record: bring the tracker level with it. In a
 * consistent state `updates` equals the log's count and `rounds` is at least the
 * requests logged since the last update (failed requests count too, unlogged).
 */
export function reconcileTracker(state: TrackerState, facts: TrackerFacts): TrackerState {
  if (state.updates !== facts.updates) {
    return {
      ...state,
      updates: facts.updates,
      lastUpdateAt: facts.lastUpdateAt,
      rounds: facts.requestsSinceUpdate,
      ignored: 0,
      remindedSinceUpdate: false,
      forceNext: false,
    };
  }
  return state.rounds < facts.requestsSinceUpdate ? { ...state, rounds: facts.requestsSinceUpdate } : state;
}

/** Validate a state read back from storage; anything malformed starts fresh. */
export function parseTrackerState(value: unknown): TrackerState | null {
  if (!value || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  const count = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;
  if (!count(v.rounds) || !count(v.ignored) || !count(v.reminders) || !count(v.updates)) return null;
  if (typeof v.remindedSinceUpdate !== 'boolean' || typeof v.forceNext !== 'boolean') return null;
  if (v.lastUpdateAt !== null && typeof v.lastUpdateAt !== 'number') return null;
  return {
    rounds: v.rounds,
    ignored: v.ignored,
    remindedSinceUpdate: v.remindedSinceUpdate,
    forceNext: v.forceNext,
    reminders: v.reminders,
    updates: v.updates,
    lastUpdateAt: v.lastUpdateAt as number | null,
  };
}
