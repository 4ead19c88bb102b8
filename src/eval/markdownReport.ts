/**
 * The eval's summary as markdown, for a terminal or a CI log: the run, the accuracy of each
 * arm by category, each arm's bill broken down (against the cheapest peer, per right answer,
 * input by how the cache served it, output by what it went to, requests per turn), how it
 * kept its memory, every failed turn with its error, the findings, and the gates.
 */
import { CATEGORIES } from './suite.js';
import type { ArmSummary, EvalResult, GateResult } from './results.js';
import { percent } from './summary.js';

/** The whole report. */
export function markdownReport(result: EvalResult): string {
  const s = result.summary;
  const lines: string[] = [
    `# workmem eval: ${result.model}`,
    '',
    `Suite ${result.suite}: ${result.conversations.length} conversations, ${result.conversations.reduce((n, c) => n + c.turns, 0).toLocaleString('en-US')} turns, ` +
      `a ${result.contextWindow.toLocaleString('en-US')}-token window${result.judge ? `; judge ${result.judge}` : ''}.`,
    '',
    '## Accuracy',
    '',
    table(
      accuracyHead(s),
      s.map((a) => accuracyCells(a, s)),
    ),
    '',
    '## Bill',
    '',
    table(BILL_HEAD, s.map(billCells)),
    '',
    '## Upkeep',
    '',
    table(COST_HEAD, s.map(costCells)),
  ];
  const failed = s.filter((a) => a.failedTurns.length);
  if (failed.length) lines.push('', '## Failed turns', '', ...failed.flatMap(failedTurnLines));
  const found = s.filter((a) => a.findings.length);
  if (found.length) lines.push('', '## Findings', '', ...found.flatMap((a) => a.findings.map((f) => `- ${a.label}: ${f}`)));
  if (result.gates.length) lines.push('', '## Gates', '', ...result.gates.map((g) => `- ${gateLine(g)}`));
  if (result.stopped) lines.push('', `**Stopped early**: ${result.stopped.message}.`);
  return `${lines.join('\n')}\n`;
}

/** The accuracy table's head: the arm, all questions, each category, the judge's score when there is one. */
export function accuracyHead(summary: readonly ArmSummary[]): string[] {
  return ['arm', 'all', ...categoriesOf(summary), ...(summary.some((a) => a.judged) ? ['judged'] : [])];
}

/** An arm's row of the accuracy table. */
export function accuracyCells(a: ArmSummary, summary: readonly ArmSummary[]): string[] {
  return [
    a.label,
    score(a.accuracy),
    ...categoriesOf(summary).map((c) => score(a.byCategory[c])),
    ...(summary.some((x) => x.judged) ? [score(a.judged)] : []),
  ];
}

/** The bill table's head: what the arm paid, and what for. */
export const BILL_HEAD = [
  'arm',
  'bill',
  '× cheapest peer',
  'per right answer',
  'input',
  'uncached',
  'cached',
  'cache-written',
  'output: answers',
  'memory writes',
  'other tools',
  'summaries',
  'requests / turn',
];

/** An arm's row of the bill table. */
export function billCells(a: ArmSummary): string[] {
  const written = a.cacheWrite ?? 0;
  const share = (n: number): string => (a.input ? `${Math.round((100 * n) / a.input)} %` : '0 %');
  const out = (kind: string): string => tokens(a.outputBy?.[kind] ?? 0);
  return [
    a.label,
    a.cost === null ? 'no price' : dollars(a.cost),
    a.costRatio === null ? '–' : `${a.costRatio.toFixed(2)} ×`,
    a.costPerRight === null ? '–' : dollars(a.costPerRight),
    tokens(a.input),
    share(a.input - a.cached - written),
    share(a.cached),
    share(written),
    out('answer'),
    out('memory'),
    out('tool'),
    out('summary'),
    a.requestsPerTurn.toFixed(2),
  ];
}

/** The upkeep table's head. */
export const COST_HEAD = [
  'arm',
  'writes / 10 turns',
  'reminders heeded',
  'compactions',
  'phase 2 began',
  'failed turns',
  'failed requests',
  'wall time',
];

/** An arm's row of the upkeep table. */
export function costCells(a: ArmSummary): string[] {
  return [
    a.label,
    a.writesPer10Turns === null ? '–' : a.writesPer10Turns.toFixed(1),
    a.reminders === null ? '–' : `${a.heeded} of ${a.reminders}`,
    compactions(a),
    phase2(a),
    `${a.failedTurns?.length ?? 0} of ${a.turns}`,
    `${a.failedRequests} of ${a.requests}`,
    `${(a.wallMs / 1000).toFixed(1)} s`,
  ];
}

/** Failed turns listed one a line (at most this many an arm; the JSON has them all). */
const FAILED_SHOWN = 10;

/** An arm's failed turns: each with its status and error, and where a failed session was kept. */
export function failedTurnLines(a: ArmSummary): string[] {
  const lines = a.failedTurns.slice(0, FAILED_SHOWN).map((f) => {
    const error = f.error ? `: ${f.error.kind}${f.error.status ? ` ${f.error.status}` : ''}: ${f.error.message}` : '';
    return `- ${a.label}, ${f.conversation} turn ${f.turn + 1}: ${f.status}${error}`;
  });
  if (a.failedTurns.length > FAILED_SHOWN)
    lines.push(`- ${a.label}: and ${a.failedTurns.length - FAILED_SHOWN} more failed turns (--json has them all)`);
  for (const dir of a.keptSessions) lines.push(`- ${a.label}: its session is kept in ${dir}`);
  return lines;
}

/** "$0.4038", or "$12.34" from a dollar up. */
export function dollars(n: number): string {
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

/** "3.53 M", "74.0 k", "950". */
export function tokens(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)} k`;
  return n.toLocaleString('en-US');
}

/** A gate's outcome in one line. */
export function gateLine(g: GateResult): string {
  const value = g.gate === 'min-accuracy' ? `${pct(g.value)} (at least ${pct(g.limit)})` : `${g.value.toFixed(3)} (at most ${g.limit})`;
  return `${g.passed ? 'passed' : 'MISSED'}: ${g.gate} ${value}, ${g.arm}`;
}

/** Our categories in their order, then any others (LongMemEval's) by name. */
export function categoriesOf(summary: readonly ArmSummary[]): string[] {
  const seen = new Set(summary.flatMap((a) => Object.keys(a.byCategory)));
  return [...CATEGORIES.filter((c) => seen.has(c)), ...[...seen].filter((c) => !(CATEGORIES as readonly string[]).includes(c)).sort()];
}

/** "llm 3, fallback 1", or "none". */
export function compactions(a: ArmSummary): string {
  const entries = Object.entries(a.compactions).filter(([, n]) => n > 0);
  return entries.length ? entries.map(([reason, n]) => `${reason} ${n}`).join(', ') : 'none';
}

/** "turn 3" (the earliest), "never", "turns 2–9 (1 never)", or "–" for a peer. */
export function phase2(a: ArmSummary): string {
  if (!a.phase2.length) return '–';
  const turns = a.phase2.flatMap((p) => (p.turn === null ? [] : [p.turn]));
  if (!turns.length) return 'never';
  const never = a.phase2.length - turns.length;
  const range = Math.min(...turns) === Math.max(...turns) ? `turn ${turns[0]}` : `turns ${Math.min(...turns)}–${Math.max(...turns)}`;
  return never ? `${range} (${never} never)` : range;
}

/** "83 % (10/12)", or "–" when nothing was asked. */
export function score(s: { right: number; asked: number } | undefined): string {
  return s && s.asked ? `${Math.round(percent(s))} % (${s.right}/${s.asked})` : '–';
}

function pct(share: number): string {
  return `${(share * 100).toFixed(1)} %`;
}

function table(head: string[], rows: string[][]): string {
  const escape = (cell: string): string => cell.replace(/\|/g, '\\|');
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(escape).join(' | ')} |`)].join(
    '\n',
  );
}
