/**
 * `--html FILE`: the eval as one self-contained page (inline CSS, SVG and a few lines of
 * script, nothing fetched) that opens offline: the per-arm tables, the findings and gates,
 * accuracy by category, and for a conversation picked from a list the input tokens of each
 * turn and the share of input served from the cache so far, a line per arm.
 */
import type { ArmName } from './arms.js';
import {
  accuracyCells,
  accuracyHead,
  BILL_HEAD,
  billCells,
  categoriesOf,
  COST_HEAD,
  costCells,
  failedTurnLines,
  gateLine,
} from './markdownReport.js';
import type { EvalResult } from './results.js';
import { percent } from './summary.js';
import { barChart, escapeXml, lineChart } from './svgCharts.js';

const COLORS: Record<ArmName, string> = {
  'workmem-auto': '#1f77b4',
  'workmem-cache-aware': '#2ca02c',
  'full-history': '#d62728',
  'summarise-75': '#ff7f0e',
};

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f3f3f3; }
figure { margin: 12px 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg { width: 100%; max-width: 720px; height: auto; background: #fff; border: 1px solid #ddd; }
svg text { font-size: 11px; fill: #444; } svg .grid { stroke: #eee; }
.legend { display: flex; gap: 14px; flex-wrap: wrap; font-size: 12px; margin-top: 4px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }
.missed { color: #b00; font-weight: 600; } .passed { color: #080; }
`;

/** The page. */
export function htmlReport(result: EvalResult): string {
  const s = result.summary;
  const categories = categoriesOf(s);
  const row = (cells: string[]): string => `<tr>${cells.map((c) => `<td>${escapeXml(c)}</td>`).join('')}</tr>`;
  const head = (cells: string[]): string => `<tr>${cells.map((c) => `<th>${escapeXml(c)}</th>`).join('')}</tr>`;
  const accuracy = `<table>${head(accuracyHead(s))}${s.map((a) => row(accuracyCells(a, s))).join('')}</table>`;
  const bill = `<table>${head(BILL_HEAD)}${s.map((a) => row(billCells(a))).join('')}</table>`;
  const cost = `<table>${head(COST_HEAD)}${s.map((a) => row(costCells(a))).join('')}</table>`;
  const failed = s.flatMap((a) => failedTurnLines(a).map((l) => `<li>${escapeXml(l.replace(/^- /, ''))}</li>`));
  const findings = s.flatMap((a) => a.findings.map((f) => `<li>${escapeXml(`${a.label}: ${f}`)}</li>`));
  const gates = result.gates.map((g) => `<li class="${g.passed ? 'passed' : 'missed'}">${escapeXml(gateLine(g))}</li>`);
  const byCategory = barChart({
    title: 'Accuracy by category',
    groups: categories,
    series: s.map((a) => ({ name: a.label, color: COLORS[a.arm], values: categories.map((c) => percent(a.byCategory[c])) })),
    yMax: 100,
    yLabel: '% right',
    format: (v) => `${Math.round(v)} %`,
  });
  const label = (arm: ArmName): string => s.find((a) => a.arm === arm)?.label ?? arm;
  const sections = result.conversations.map((c, i) => {
    const tokens = lineChart({
      title: `Input tokens per turn: ${c.id}`,
      series: c.arms.map((a) => ({ name: label(a.arm), color: COLORS[a.arm], values: a.tokensPerTurn })),
      xLabel: 'turn',
      yLabel: 'input tokens',
    });
    const cachedShare = lineChart({
      title: `Cached share of input so far: ${c.id}`,
      series: c.arms.map((a) => {
        let input = 0;
        let cached = 0;
        return {
          name: label(a.arm),
          color: COLORS[a.arm],
          values: a.tokensPerTurn.map((t, k) => ((input += t), (cached += a.cachedPerTurn[k] ?? 0), input ? (100 * cached) / input : 0)),
        };
      }),
      xLabel: 'turn',
      yLabel: '% cached',
      yMax: 100,
      format: (v) => `${Math.round(v)} %`,
    });
    return `<section class="conversation" data-id="${escapeXml(c.id)}"${i ? ' hidden' : ''}>${tokens}${cachedShare}</section>`;
  });
  const options = result.conversations.map(
    (c) => `<option value="${escapeXml(c.id)}">${escapeXml(`${c.id} (${c.turns} turns, ${c.language})`)}</option>`,
  );
  const title = `workmem eval: ${result.model}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(title)}</title><style>${STYLE}</style></head>
<body>
<h1>${escapeXml(title)}</h1>
<p>${escapeXml(`Suite ${result.suite}: ${result.conversations.length} conversations, ${result.conversations.reduce((n, c) => n + c.turns, 0)} turns, a ${result.contextWindow.toLocaleString('en-US')}-token window${result.judge ? `; judge ${result.judge}` : ''}.`)}${result.stopped ? ` <strong>Stopped early: ${escapeXml(result.stopped.message)}.</strong>` : ''}</p>
<h2>Accuracy</h2>${accuracy}
<h2>Bill</h2>${bill}
<h2>Upkeep</h2>${cost}
${failed.length ? `<h2>Failed turns</h2><ul>${failed.join('')}</ul>` : ''}
${findings.length ? `<h2>Findings</h2><ul>${findings.join('')}</ul>` : ''}
${gates.length ? `<h2>Gates</h2><ul>${gates.join('')}</ul>` : ''}
<h2>Plots</h2>${byCategory}
<p><label>Conversation <select id="conversation">${options.join('')}</select></label></p>
${sections.join('\n')}
<script>
document.getElementById('conversation').addEventListener('change', (event) => {
  for (const section of document.querySelectorAll('section.conversation')) section.hidden = section.dataset.id !== event.target.value;
});
</script>
</body></html>
`;
}
