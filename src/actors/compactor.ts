/**
 * The compactor actor: a compaction the machines order — the system's before a request
 * (the turn machine's policy, src/compaction/policy.ts, says when, why and to what budget:
 * fallback, overflow, horizon, the auto policy's tier) or the user's between turns
 * (/compact, Session.compact, through the session machine). compact.ts does it and reports it.
 */
import type { CompactorInput, CompactorOutput } from '../../machines/turnMachine.js';
import { compact, type CompactionDeps } from '../compaction/compact.js';
import type { SessionEvent } from '../events.js';

export async function runCompactor(
  input: CompactorInput,
  deps: CompactionDeps,
  emit: (event: SessionEvent) => void,
  signal: AbortSignal,
): Promise<CompactorOutput> {
  const result = await compact(input.order, deps, signal, { emit, request: input.request });
  return { history: result.history, replaced: result.replaced, result: result.applied };
}
