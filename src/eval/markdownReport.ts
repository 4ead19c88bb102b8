/**
 * The eval's summary as markdown, for a terminal or a CI log: the run, the accuracy of each
 * arm by category, what each arm cost and how it kept its memory, the findings, and the gates.
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
    '## Cost and upkeep',
    '',
    table(COST_HEAD, s.map(costCells)),
  ];
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

/** The cost and upkeep table's head. */
export const COST_HEAD = [
  'arm',
  'input tokens',
  'cached',
  'bill',
  'writes / 10 turns',
  'reminders heeded',
  'compactions',
  'phase 2 began',
  'failed requests',
  'wall time',
];

/** An arm's row of the cost and upkeep table. */
export function costCells(a: ArmSummary): string[] {
  return [
    a.label,
    a.input.toLocaleString('en-US'),
    `${a.input ? Math.round((100 * a.cached) / a.input) : 0} %`,
    a.cost === null ? 'no price' : `$${a.cost.toFixed(a.cost < 1 ? 4 : 2)}`,
    a.writesPer10Turns === null ? '–' : a.writesPer10Turns.toFixed(1),
    a.reminders === null ? '–' : `${a.heeded} of ${a.reminders}`,
    compactions(a),
    phase2(a),
    `${a.failedRequests} of ${a.requests}`,
    `${(a.wallMs / 1000).toFixed(1)} s`,
  ];
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
