/**
 * The compactor actor: compaction the system decides on before a request.
 * - fallback / overflow: bring the carried history under the budget: the fewest oldest
 *   whole turns (keeping the last few), then the active turn's oldest tool outputs;
 *   with a summary when a summarizer is available, archive alone otherwise.
 * - horizon: the same for the history phase 1 would send, when another mode is on.
 * - auto (the "auto" compaction policy): the compression guide's tier, applied by the
 *   system for models that do not manage their memory.
 */
import type { CompactorInput, CompactorOutput } from '../../machines/turnMachine.js';
import { applyCompaction, type CompactionDeps } from '../compaction/apply.js';
import { planConversation, planForBudget, planToolStubs, type CompactionPlan, type CompactionTarget } from '../compaction/plan.js';
import { tokensBetween } from '../history/historyView.js';
import { AUTO_KEEP_TOOL_OUTPUTS } from '../../machines/turnMachine.js';

export async function runCompactor(input: CompactorInput, deps: CompactionDeps, signal: AbortSignal): Promise<CompactorOutput> {
  const view = deps.store.history();
  const [from, to] = input.range;
  const before = input.fixedTokens + tokensBetween(view, from, to);
  const plan =
    input.reason === 'auto' && input.target
      ? autoPlan(input, input.target)
      : planForBudget(view, input.range, input.turn, input.budget, input.keepRecentTurns);
  const target: CompactionTarget =
    input.target ?? (plan.archive && plan.stubs.length ? 'all' : plan.stubs.length ? 'tools' : 'conversation');
  // The horizon trims history no request carries: a summary would cost a model call for nothing.
  const strategy = plan.archive && deps.summarizer && input.reason !== 'horizon' ? 'summarize' : 'archive';
  const result = await applyCompaction(plan, { target, strategy, reason: input.reason, turn: input.turn }, deps, signal);
  const removed = plan.archive ? plan.archive[1] - plan.archive[0] - 1 : 0;
  const after = input.fixedTokens + tokensBetween(deps.store.history(), from, Math.max(from, to - removed));
  return {
    history: deps.store.history(),
    replaced: result.changed,
    files: result.files,
    tokensBefore: before,
    tokensAfter: result.changed ? after : before,
  };

  function autoPlan(i: CompactorInput, tier: CompactionTarget): CompactionPlan {
    const archive = tier === 'tools' ? null : planConversation(view, from, i.turn, i.keepRecentTurns);
    const stubs = tier === 'conversation' ? [] : planToolStubs(view, archive ? archive[1] : from, to, AUTO_KEEP_TOOL_OUTPUTS);
    return { archive, stubs };
  }
}
