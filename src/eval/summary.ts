/**
 * From the measured conversations to each arm's summary over the run, and the findings: what
 * the figures say about a model in words, e.g. "memory never maintained — phase 2 never began;
 * the fallback carried the session". Pure functions of the results.
 */
import { ARM_LABELS, type ArmName } from './arms.js';
import { addOutput, type OutputByKind } from './meteredModel.js';
import type { ArmResult, ArmSummary, ConversationResult, Score } from './results.js';

/** Each arm's summary over the conversations, in the order of `arms`. */
export function summarise(conversations: readonly ConversationResult[], arms: readonly ArmName[]): ArmSummary[] {
  const summaries = arms.map((arm) => {
    const runs = conversations.flatMap((c) => c.arms.filter((a) => a.arm === arm).map((a) => ({ conversation: c, run: a })));
    return armSummary(
      arm,
      runs.map((r) => r.run),
      runs.map((r) => r.conversation),
    );
  });
  const peers = summaries.filter((s) => !s.arm.startsWith('workmem') && s.cost !== null).map((s) => s.cost!);
  const cheapest = peers.length ? Math.min(...peers) : null;
  for (const s of summaries) s.costRatio = s.cost !== null && cheapest ? s.cost / cheapest : null;
  return summaries;
}

function armSummary(arm: ArmName, runs: ArmResult[], conversations: ConversationResult[]): ArmSummary {
  const sum = (f: (r: ArmResult) => number): number => runs.reduce((n, r) => n + f(r), 0);
  const questions = runs.flatMap((r) => r.questions);
  const byCategory: Record<string, Score> = {};
  for (const q of questions) {
    const score = (byCategory[q.category] ??= { right: 0, asked: 0 });
    score.asked++;
    if (q.correct) score.right++;
  }
  const verdicts = questions.filter((q) => q.judged === true || q.judged === false);
  const workmem = runs.some((r) => r.upkeep);
  const turns = conversations.reduce((n, c) => n + c.turns, 0);
  const compactions: Record<string, number> = {};
  for (const r of runs) {
    for (const [reason, count] of Object.entries(r.upkeep?.compactions ?? {})) compactions[reason] = (compactions[reason] ?? 0) + count!;
    if (r.summaries) compactions.summary = (compactions.summary ?? 0) + r.summaries;
  }
  const costs = runs.map((r) => r.cost);
  const cost = costs.some((c) => c === null) ? null : costs.reduce<number>((n, c) => n + c!, 0);
  const right = questions.filter((q) => q.correct).length;
  const summary: ArmSummary = {
    arm,
    label: ARM_LABELS[arm],
    accuracy: { right, asked: questions.length },
    byCategory,
    ...(questions.some((q) => q.judged !== undefined)
      ? { judged: { right: verdicts.filter((q) => q.judged).length, asked: verdicts.length } }
      : {}),
    input: sum((r) => r.input),
    cached: sum((r) => r.cached),
    cacheWrite: sum((r) => r.cacheWrite ?? 0),
    output: sum((r) => r.output),
    outputBy: runs.reduce<OutputByKind>((n, r) => addOutput(n, r.outputBy ?? { answer: r.output }), {}),
    cost,
    costRatio: null,
    costPerRight: cost !== null && right ? cost / right : null,
    requests: sum((r) => r.requests),
    requestsPerTurn: turns ? sum((r) => r.requests) / turns : 0,
    failedRequests: sum((r) => r.failedRequests),
    counted: runs.some((r) => r.counted),
    turns,
    failedTurns: runs.flatMap((r, i) => (r.failures ?? []).map((f) => ({ conversation: conversations[i]!.id, ...f }))),
    keptSessions: runs.flatMap((r) => (r.keptSession ? [r.keptSession] : [])),
    writesPer10Turns: workmem && turns ? (sum((r) => r.upkeep?.memoryWrites ?? 0) * 10) / turns : null,
    reminders: workmem ? sum((r) => r.upkeep?.reminders ?? 0) : null,
    heeded: workmem ? sum((r) => r.upkeep?.heeded ?? 0) : null,
    compactions,
    compactCalls: workmem ? sum((r) => r.upkeep?.compactCalls ?? 0) : null,
    phase2: workmem
      ? runs.map((r, i) => ({ conversation: conversations[i]!.id, turn: r.upkeep!.phase2At === null ? null : r.upkeep!.phase2At + 1 }))
      : [],
    toolErrors: sum((r) => r.upkeep?.toolErrors ?? r.peerTools?.errors ?? 0),
    textToolCalls: sum((r) => r.upkeep?.textToolCalls ?? r.peerTools?.asText ?? 0),
    wallMs: sum((r) => r.wallMs),
    findings: [],
  };
  summary.findings = findings(summary, runs);
  return summary;
}

/** What an arm's figures say, in words, worst first. */
export function findings(s: ArmSummary, runs: readonly ArmResult[]): string[] {
  const out: string[] = [];
  if (s.writesPer10Turns !== null) {
    const writes = runs.reduce((n, r) => n + (r.upkeep?.memoryWrites ?? 0), 0);
    const never = s.phase2.filter((p) => p.turn === null).length;
    const carried = (s.compactions.fallback ?? 0) + (s.compactions.overflow ?? 0) > (s.compactions.llm ?? 0);
    if (writes === 0 && never === s.phase2.length && s.phase2.length)
      out.push(
        carried && (s.compactions.fallback ?? 0) > 0
          ? 'memory never maintained — phase 2 never began; the fallback carried the session'
          : 'memory never maintained — phase 2 never began',
      );
    else if (never) out.push(`phase 2 never began in ${never} of ${s.phase2.length} conversations`);
    if (s.reminders && s.heeded !== null && s.heeded < s.reminders / 2)
      out.push(`reminders mostly ignored: ${s.heeded} of ${s.reminders} heeded within 2 requests`);
    const llm = s.compactions.llm ?? 0;
    const system = (s.compactions.fallback ?? 0) + (s.compactions.overflow ?? 0);
    if (writes > 0 && system > llm) out.push(`the fallback compacted more than the model did (${system} against ${llm})`);
    const calls = Math.max(s.compactCalls ?? 0, llm);
    if (s.turns && (calls * 10) / s.turns > 1)
      out.push(
        calls > llm
          ? `the model asked to compact often: ${calls} times in ${s.turns} turns, ${llm} of them compacted`
          : `the model compacted often: ${llm} times in ${s.turns} turns`,
      );
  }
  if (s.toolErrors)
    out.push(`${s.toolErrors} tool call${s.toolErrors === 1 ? '' : 's'} failed (malformed arguments, unknown tools or refused writes)`);
  if (s.textToolCalls)
    out.push(`${s.textToolCalls} answer${s.textToolCalls === 1 ? '' : 's'} held tool calls written as text instead of made`);
  if (s.failedRequests) out.push(`${s.failedRequests} of ${s.requests} requests failed`);
  if (s.counted) out.push('the server reported no usage for some requests: their tokens are our count');
  return out;
}

/** A score as a percentage (0 when nothing was asked). */
export function percent(score: Score | undefined): number {
  return score && score.asked ? (100 * score.right) / score.asked : 0;
}
