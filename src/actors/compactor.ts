/**
 * The compactor actor: compaction the system decides on before a request (the turn
 * machine's policy, src/compaction/policy.ts, says when, why and to what budget).
 * - fallback / overflow: bring the carried history under the budget: the fewest oldest
 *   whole turns (keeping the last few), then the active turn's oldest tool outputs;
 *   with a summary when a summarizer is available, archive alone otherwise.
 * - horizon: the same for the history phase 1 would send, when another mode is on.
 * - auto (the "auto" compaction policy): the compression guide's tier, applied by the
 *   system for models that do not manage their memory.
 */
import type { CompactorInput, CompactorOutput } from '../../machines/turnMachine.js';
import { compact, type CompactionDeps, type CompactionRequest } from '../compaction/compact.js';

export async function runCompactor(input: CompactorInput, deps: CompactionDeps, signal: AbortSignal): Promise<CompactorOutput> {
  const { range, turn, keepRecentTurns } = input;
  const request: CompactionRequest =
    input.reason === 'auto' && input.target
      ? { kind: 'tier', reason: 'auto', turn, range, tier: input.target, keepRecentTurns }
      : { kind: 'budget', reason: input.reason, turn, range, budget: input.budget, keepRecentTurns };
  const result = await compact(request, deps, signal);
  return {
    history: result.history,
    replaced: result.replaced,
    files: result.files,
    // The event reports the whole request: the history plus what it is sent with.
    tokensBefore: input.fixedTokens + result.tokensBefore,
    tokensAfter: input.fixedTokens + result.tokensAfter,
  };
}
