/**
 * The one way to compact, for every caller: the compactor actor (fallback, overflow,
 * horizon, the auto policy, the user's /compact, a summary prepared in the background) and
 * the compact_history tool. A request
 * says what to compact; this plans it (plan.ts), carries the plan out (apply.ts), says
 * what changed, measured on the range compacted, and is the one place that reports a
 * compaction (compaction_start, compaction_end).
 */
import type { CompactionReason, SessionEvent } from '../events.js';
import type { HistoryView } from '../history/historyView.js';
import { tokensBetween } from '../history/historyView.js';
import { yieldIfBusy } from '../runtime/fairYield.js';
import { applyCompaction, type CompactionDeps, type CompactionResult } from './apply.js';
import { preparedPlan, type PreparedSummary } from './prepared.js';
import {
  AUTO_KEEP_TOOL_OUTPUTS,
  planForBudget,
  planForTarget,
  planForTier,
  type CompactionPlan,
  type CompactionStrategy,
  type CompactionTarget,
} from './plan.js';

export type { CompactionDeps, CompactionResult } from './apply.js';

export type CompactionRequest =
  /** The system's compaction: bring the range under a budget (see policy.ts). */
  | {
      kind: 'budget';
      /** fallback, overflow or horizon. */
      reason: CompactionReason;
      /** The running turn: its messages are never archived, and the entry carries it. */
      turn: number;
      range: [number, number];
      budget: number;
      keepRecentTurns: number;
    }
  /** The auto policy: the compression guide's tier within the range. */
  | { kind: 'tier'; reason: 'auto'; turn: number; range: [number, number]; tier: CompactionTarget; keepRecentTurns: number }
  /** compact_history (the model) or /compact (the user): a target over the whole history. */
  | {
      kind: 'target';
      reason: 'llm' | 'manual';
      /** The turn the entry carries. */
      turn: number;
      /** The turn whose messages stay: the running one, or for a compaction between turns the next. */
      activeTurn: number;
      target: CompactionTarget;
      strategy: CompactionStrategy;
      /** Turns (conversation) or tool outputs (tools) to keep as they are. */
      keepRecent: number;
      /** A file inside working-memory/ to append the archive to, instead of a new detail/ file. */
      archiveTo?: string;
    }
  /**
   * The fallback, with a summary prepared in the background: its turns are archived with it,
   * and whatever more the fallback's budget needs (a sudden jump past the line) is archived
   * in the same entry without a summary: no model is asked.
   */
  | {
      kind: 'prepared';
      reason: 'background';
      turn: number;
      prepared: PreparedSummary;
      range: [number, number];
      budget: number;
      keepRecentTurns: number;
    };

export interface Compacted {
  /** Items replaced or stubbed; 0 when there was nothing to compact. */
  replaced: number;
  files: string[];
  /** The history afterwards. */
  history: HistoryView;
  /** Tokens of the range compacted (the whole history for a target), before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /** The details: the log entry, the turns archived, the outputs stubbed, the summary. */
  applied: CompactionResult;
}

/** Where a compaction's events go, and the request it runs before (0: between requests or turns). */
export interface CompactionReport {
  emit(event: SessionEvent): void;
  request: number;
}

/**
 * Compact as asked. Reported as compaction_start once the plan is known, before anything
 * is written, and compaction_end after, both with the compacted range's own tokens (those
 * of the log's compaction entry); a plan with nothing in it is reported as replacing 0.
 */
export async function compact(
  request: CompactionRequest,
  deps: CompactionDeps,
  signal: AbortSignal,
  report?: CompactionReport,
): Promise<Compacted> {
  // Planned in a turn of the loop of its own: on a history of thousands of items, the request
  // that found it due and the plan are each milliseconds of work.
  await yieldIfBusy();
  const view = deps.store.history();
  const [from, to] = rangeOf(request, view);
  const tokensBefore = tokensBetween(view, from, to);
  const plan = planOf(request, view);
  const at = { turn: request.turn, request: report?.request ?? 0, reason: request.reason };
  report?.emit({ type: 'compaction_start', ...at, tokensBefore });
  const target = request.kind === 'target' ? request.target : request.kind === 'tier' ? request.tier : targetOf(plan);
  const applied = await applyCompaction(
    plan,
    {
      target,
      strategy: strategyOf(request, plan, deps),
      reason: request.reason,
      turn: request.turn,
      ...(request.kind === 'target' && request.archiveTo !== undefined ? { archiveTo: request.archiveTo } : {}),
      ...(request.kind === 'prepared' ? { summary: request.prepared.summary, summarized: request.prepared.items.length } : {}),
    },
    deps,
    signal,
  );
  await yieldIfBusy();
  const history = deps.store.history();
  // An archive replaces its items by one note (the pinned ones stay); stubs keep their places.
  const removed = plan.archive ? plan.archive[1] - plan.archive[0] - plan.kept.length - 1 : 0;
  const tokensAfter = applied.changed ? tokensBetween(history, from, Math.max(from, to - removed)) : tokensBefore;
  report?.emit({ type: 'compaction_end', ...at, tokensBefore, tokensAfter, replaced: applied.changed, files: applied.files });
  return { replaced: applied.changed, files: applied.files, history, tokensBefore, tokensAfter, applied };
}

/** The range a compaction is measured on: the whole history for a target, else the range given. */
function rangeOf(request: CompactionRequest, view: HistoryView): [number, number] {
  return request.kind === 'target' ? [0, view.length] : request.range;
}

function planOf(request: CompactionRequest, view: HistoryView): CompactionPlan {
  switch (request.kind) {
    case 'prepared':
      return preparedPlan(
        request.prepared,
        view,
        planForBudget(view, request.range, request.turn, request.budget, request.keepRecentTurns),
      );
    case 'budget':
      return planForBudget(view, request.range, request.turn, request.budget, request.keepRecentTurns);
    case 'tier':
      return planForTier(view, request.range, request.turn, request.tier, request.keepRecentTurns, AUTO_KEEP_TOOL_OUTPUTS);
    case 'target':
      return planForTarget(view, request.activeTurn, request.target, request.keepRecent);
  }
}

/** What a budget plan compacts, for the log entry. */
function targetOf(plan: CompactionPlan): CompactionTarget {
  return plan.archive && plan.stubs.length ? 'all' : plan.stubs.length ? 'tools' : 'conversation';
}

/**
 * A summary when one is asked for (or, for the system, when turns are archived) and a
 * summarizer is there. The horizon trims history no request carries: a summary would
 * cost a model call for nothing.
 */
function strategyOf(request: CompactionRequest, plan: CompactionPlan, deps: CompactionDeps): CompactionStrategy {
  if (request.kind === 'prepared') return 'summarize';
  if (!deps.summarizer) return 'archive';
  if (request.kind === 'target') return request.strategy;
  return plan.archive && request.reason !== 'horizon' ? 'summarize' : 'archive';
}
