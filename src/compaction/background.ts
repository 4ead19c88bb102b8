/**
 * Background compaction's decisions, as pure functions of the session's state (docs/design.md
 * §2.5): when to start preparing the fallback's summary, of which turns, and whether a summary
 * made earlier still covers history the session holds. The session machine's background region
 * asks these; the turn machine swaps a ready summary in where the fallback would compact.
 *
 * The summary covers what the fallback will archive when the history reaches its threshold:
 * the oldest whole turns holding the fallback's stride (threshold − its target, a third of the
 * threshold), chosen now, while the history is still growing at its tail. So the fallback,
 * finding it ready, compacts the same turns it would have, without the model call.
 */
import type { HistoryView } from '../history/historyView.js';
import { tokensBetween } from '../history/historyView.js';
import type { RecentWindow } from '../history/recentWindow.js';
import { estimateWithoutTail, type PromptBase } from '../prompt/promptBuilder.js';
import type { HistoryMode } from '../history/historyView.js';
import { planForBudget, type CompactionPlan } from './plan.js';
import type { BackgroundOrder } from './prepared.js';
import { carriedRange, compactionBudget, FALLBACK_TARGET_SHARE, TAIL_ALLOWANCE, thresholdTokens, type PolicySettings } from './policy.js';

/** What the decisions read of a session (its machine's context has this shape). */
export interface BackgroundInput {
  history: HistoryView;
  mode: HistoryMode;
  turn: number;
  /** The last request's prompt base: none before this process's first request. */
  base: PromptBase | null;
  calibration: number;
  window?: RecentWindow | null;
  statics: { settings: PolicySettings & { backgroundThreshold: number | null } };
}

/**
 * The history the next request carries has reached the background threshold, and there is
 * something the fallback would archive: a summary of it is due.
 */
export function backgroundDue(input: BackgroundInput): boolean {
  return backgroundOrder(input) !== null;
}

const orders = new WeakMap<HistoryView, { input: BackgroundInput; order: BackgroundOrder | null }>();

/** The background summary due now, or null: none is (below the threshold, nothing to archive, no summarizer). */
export function backgroundOrder(input: BackgroundInput): BackgroundOrder | null {
  const { settings } = input.statics;
  if (settings.backgroundThreshold === null || input.base === null || input.history.length === 0) return null;
  // Asked on every event the session takes: the plan once per view.
  const known = orders.get(input.history);
  if (known && sameInputs(known.input, input)) return known.order;
  const order = orderOf(input, settings.backgroundThreshold);
  orders.set(input.history, { input, order });
  return order;
}

function sameInputs(a: BackgroundInput, b: BackgroundInput): boolean {
  return a.mode === b.mode && a.base === b.base && a.calibration === b.calibration && a.window === b.window && a.turn === b.turn;
}

function orderOf(input: BackgroundInput, share: number): BackgroundOrder | null {
  const { history, statics } = input;
  const settings = statics.settings;
  // The turn of the last message is never archived, nor the keepRecentTurns before it.
  const active = history.items[history.length - 1]!.turn;
  const state = { ...input, turn: active };
  const range = carriedRange(state);
  const carried = estimateWithoutTail(input.base!, history, range, input.calibration) + TAIL_ALLOWANCE;
  if (carried < share * settings.contextWindow) return null;
  const threshold = thresholdTokens(settings);
  const stride = threshold - Math.floor(threshold * FALLBACK_TARGET_SHARE);
  const before = tokensBetween(history, range[0], range[1]);
  // What the fallback would keep at its line (its own budget when it keeps only the recent turns).
  let budget = Math.max(0, before - stride);
  if (settings.fallbackTarget === 'recent-turns') {
    const policy = { ...state, request: 1, compaction: { ran: false }, prompt: null };
    budget = Math.min(budget, compactionBudget(policy, 'fallback').budget);
  }
  const plan = planForBudget(history, range, active, budget, settings.keepRecentTurns);
  if (!plan.archive) return null;
  return orderFor(history, plan, input.turn);
}

function orderFor(history: HistoryView, plan: CompactionPlan, turn: number): BackgroundOrder {
  const [from, to] = plan.archive!;
  const items = history.items.slice(from, to);
  const kept = plan.kept.map((i) => history.items[i]!.seq);
  const archived = items.filter((item) => !item.pinned);
  const turns = archived.map((item) => item.turn);
  const first = Math.min(...turns);
  const last = Math.max(...turns);
  return { turn, items, kept, tokens: tokensBetween(history, from, to), turns: first === last ? `${first}` : `${first}-${last}` };
}

/** How long a failed background summary waits before it is tried again: 10 s, doubling, at most 10 minutes. */
export function backgroundRetryMs(failures: number): number {
  return Math.min(600_000, 10_000 * 2 ** Math.max(0, failures - 1));
}
