/**
 * When the system compacts before a request, and how far: the decisions the turn machine
 * takes in its guards and in the compactor's input, as pure functions of plain inputs.
 * - fallback: the percentage the request shows the model in <context_meta> reaches the
 *   threshold; compact to 2/3 of it, or with fallbackTarget 'recent-turns' to the last
 *   keepRecentTurns turns.
 * - overflow: the server refused the request; compact to 1/2 of it, and at least halve
 *   the history (our count was off).
 * - horizon: outside phase 1 the history is not sent, yet it is what phase 1 would send;
 *   once that reaches the threshold its oldest turns are archived like the fallback's.
 * - auto (the "auto" policy): the compression guide's tier at the first request of a turn,
 *   read off the same shown percentage.
 * - background: the fallback is due and a summary prepared in the background (background.ts)
 *   still covers the history: it is swapped in instead of a summary asked for now.
 * The turn machine builds the request (its tail included) before deciding, so a decision
 * and the number the model sees never disagree.
 */
import type { CompactionReason } from '../events.js';
import { injectedRange, pinsBetween, tokensBetween, tokensOf, type HistoryMode, type HistoryView } from '../history/historyView.js';
import type { RecentWindow } from '../history/recentWindow.js';
import { estimateWithoutTail, pinnedBeforeTokens, type BuiltPrompt, type PromptBase } from '../prompt/promptBuilder.js';
import type { TurnSettings } from '../settings/settings.js';
import type { CompactionRequest } from './compact.js';
import { stillCovers, type PreparedSummary } from './prepared.js';
import { AUTO_KEEP_TOOL_OUTPUTS, autoTier, isEmptyPlan, NOTE_TOKENS, planForTier, type CompactionTarget } from './plan.js';

/** Room kept for <context_meta> and a reminder where no request is built: the horizon and the budgets. */
export const TAIL_ALLOWANCE = 400;
/**
 * Once the fallback fires it compacts well below the line (to 2/3 of it: 50 % of the
 * window by default), so it does not fire again on the very next request; an overflow
 * from the server means our estimate was wrong, so it goes lower still.
 */
export const FALLBACK_TARGET_SHARE = 2 / 3;
export const OVERFLOW_TARGET_SHARE = 0.5;

export type PolicySettings = Pick<
  TurnSettings,
  | 'contextWindow'
  | 'fallbackThreshold'
  | 'hybridRecent'
  | 'recentTurns'
  | 'recentTurnsStep'
  | 'compaction'
  | 'keepRecentTurns'
  | 'fallbackTarget'
  | 'backgroundThreshold'
>;

/**
 * What the policy reads of a turn between two requests. The turn machine's context has
 * this shape, so its guards pass the context itself (no copy per request).
 */
export interface PolicyInput {
  history: HistoryView;
  mode: HistoryMode;
  turn: number;
  /** The request about to be sent, from 1. */
  request: number;
  /**
   * Whether a compaction already ran before this request (it runs at most once per request),
   * and the summary prepared in the background, ready to swap in (background.ts).
   */
  compaction: { ran: boolean; background?: { ready: PreparedSummary | null } };
  /** The server's count minus ours, added to every estimate. */
  calibration: number;
  /** Set once the memory is loaded, which is before any decision here. */
  base: PromptBase | null;
  /** The next request as built, tail included: what the model will be shown. */
  prompt: Pick<BuiltPrompt, 'meta' | 'tokens'> | null;
  /** Phase 2's window when it holds still (recentTurnsStep over 1). */
  window?: RecentWindow | null;
  statics: { settings: PolicySettings };
}

/** What the compactor gets for a reason: the range to compact and how small to make it. */
export interface CompactionBudget {
  range: [number, number];
  /** Tokens the range may hold after compaction. */
  budget: number;
  /** Tokens of the request besides the history (system, memory, tools, tail allowance). */
  fixedTokens: number;
}

/**
 * The system's compaction before a request, as the compactor is asked for it: a summary
 * prepared in the background, the auto policy's tier, else a budget.
 */
export function compactionOrder(input: PolicyInput, reason: CompactionReason, tier: CompactionTarget | null): CompactionRequest {
  const prepared = input.compaction.background?.ready;
  const keepRecentTurns = input.statics.settings.keepRecentTurns;
  if (reason === 'background' && prepared) {
    // The fallback's own budget: what the prepared summary does not cover of it is archived with it.
    const { range, budget } = compactionBudget(input, 'fallback');
    return { kind: 'prepared', reason, turn: input.turn, prepared, range, budget, keepRecentTurns };
  }
  const { range, budget } = compactionBudget(input, reason);
  return reason === 'auto' && tier
    ? { kind: 'tier', reason: 'auto', turn: input.turn, range, tier, keepRecentTurns }
    : { kind: 'budget', reason, turn: input.turn, range, budget, keepRecentTurns };
}

export function thresholdTokens(settings: Pick<TurnSettings, 'contextWindow' | 'fallbackThreshold'>): number {
  return Math.floor(settings.fallbackThreshold * settings.contextWindow);
}

/** The threshold as a percentage of the window, as <context_meta> shows it (0.75 → 75). */
export function thresholdPercent(settings: Pick<TurnSettings, 'fallbackThreshold'>): number {
  return Math.round(settings.fallbackThreshold * 10_000) / 100;
}

/** The history range the next request carries in the current mode. */
export function carriedRange(input: Pick<PolicyInput, 'history' | 'mode' | 'turn' | 'window' | 'statics'>): [number, number] {
  const settings = input.statics.settings;
  const held = input.window && input.window.from >= 1 ? input.window : null;
  return injectedRange(input.history, input.mode, input.turn, held ? { ...settings, windowFrom: held.from } : settings);
}

/** The range phase 1 would carry: the whole history. */
function phase1Range(input: PolicyInput): [number, number] {
  return injectedRange(input.history, 'phase1', input.turn, input.statics.settings);
}

function withoutTail(input: PolicyInput, range: [number, number]): number {
  return estimateWithoutTail(baseOf(input), input.history, range, input.calibration);
}

/** The tokens_percent the next request shows the model. */
export function shownPercent(input: PolicyInput): number {
  return builtOf(input).meta.tokens_percent;
}

/** The fallback is due: the next request would show the model the threshold or more. */
export function overThreshold(input: PolicyInput): boolean {
  return !input.compaction.ran && shownPercent(input) >= thresholdPercent(input.statics.settings);
}

/**
 * The fallback is due and a summary prepared in the background still covers history the
 * turn holds: it is swapped in, and the fallback waits for no model.
 */
export function preparedDue(input: PolicyInput): boolean {
  const prepared = input.compaction.background?.ready;
  return !!prepared && overThreshold(input) && stillCovers(prepared, input.history);
}

/**
 * The horizon is due (first request of a turn, outside phase 1): what phase 1 would send
 * reaches the threshold. So a session of any length keeps a bounded history (memory,
 * resume time, a safe switch back to phase 1).
 */
export function beyondHorizon(input: PolicyInput): boolean {
  if (input.mode === 'phase1' || input.request !== 1 || input.compaction.ran) return false;
  return withoutTail(input, phase1Range(input)) + TAIL_ALLOWANCE >= thresholdTokens(input.statics.settings);
}

/**
 * The "auto" policy, at the first request of a turn: the compression guide's tier, if
 * there is something for it to compact (no empty compactions).
 */
export function autoCompactionTier(input: PolicyInput): CompactionTarget | null {
  const { settings } = input.statics;
  if (settings.compaction !== 'auto' || input.compaction.ran || input.request !== 1) return null;
  const tier = autoTier(shownPercent(input));
  if (!tier) return null;
  const plan = planForTier(input.history, carriedRange(input), input.turn, tier, settings.keepRecentTurns, AUTO_KEEP_TOOL_OUTPUTS);
  return isEmptyPlan(plan) ? null : tier;
}

/** The range to compact for a reason and the tokens it may keep (see the shares above). */
export function compactionBudget(input: PolicyInput, reason: CompactionReason): CompactionBudget {
  const overflow = reason === 'overflow';
  let range = reason === 'horizon' ? phase1Range(input) : carriedRange(input);
  // The pinned messages sent before the range cost what they cost: no compaction makes them smaller.
  const fixedTokens = baseOf(input).tokens + pinnedBeforeTokens(input.history, range[0]) + input.calibration + TAIL_ALLOWANCE;
  const share = overflow ? OVERFLOW_TARGET_SHARE : FALLBACK_TARGET_SHARE;
  let budget = Math.max(0, Math.floor(thresholdTokens(input.statics.settings) * share) - fixedTokens - 1);
  if (reason === 'horizon') {
    // What no request carries any more, never what this one does (phase 2's window may hold many turns).
    const carried = carriedRange(input)[0];
    budget = Math.max(0, budget - tokensBetween(input.history, carried, range[1]));
    range = [range[0], Math.max(range[0], carried)];
  }
  // The server refused what we counted as fitting: our count is off, so at least halve the history.
  if (overflow) budget = Math.min(budget, Math.floor(tokensBetween(input.history, range[0], range[1]) / 2));
  // 'recent-turns': no more than the last keepRecentTurns turns, the pinned messages and the note that replaces the rest.
  if (reason === 'fallback' && input.statics.settings.fallbackTarget === 'recent-turns') {
    const keep = Math.max(
      range[0],
      injectedRange(input.history, 'phase2', input.turn, { hybridRecent: 1, recentTurns: input.statics.settings.keepRecentTurns })[0],
    );
    const pinned = tokensOf(input.history, pinsBetween(input.history, range[0], keep));
    budget = Math.min(budget, pinned + tokensBetween(input.history, keep, range[1]) + NOTE_TOKENS);
  }
  return { range, budget, fixedTokens };
}

function builtOf(input: PolicyInput): Pick<BuiltPrompt, 'meta' | 'tokens'> {
  if (!input.prompt) throw new Error('compaction policy: the request is not built yet (it is built before any decision)');
  return input.prompt;
}

function baseOf(input: PolicyInput): PromptBase {
  if (!input.base) throw new Error('compaction policy: the prompt base is not built yet (the memory is loaded first)');
  return input.base;
}
