/**
 * The HTML report's charts, drawn as inline SVG strings with nothing loaded: a line chart
 * (a value per turn, a line per arm) and a grouped bar chart (a bar per arm in each group).
 * Axes carry a few round ticks; every text is escaped.
 */

/** One line or one set of bars. */
export interface ChartSeries {
  name: string;
  color: string;
  values: number[];
}

const WIDTH = 720;
const HEIGHT = 260;
const PAD = { left: 64, right: 16, top: 16, bottom: 40 };

/** Text safe inside SVG or HTML. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Round ticks from 0 to at least `max`: 0, step, 2·step, … with step 1, 2 or 5 × 10ⁿ. */
export function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function axes(yTicks: number[], yMax: number, format: (v: number) => string, xLabel: string, yLabel: string): string {
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const y = (v: number): number => PAD.top + plotHeight - (v / yMax) * plotHeight;
  return [
    ...yTicks.map(
      (t) =>
        `<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" class="grid"/>` +
        `<text x="${PAD.left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${escapeXml(format(t))}</text>`,
    ),
    `<text x="${(PAD.left + WIDTH - PAD.right) / 2}" y="${HEIGHT - 6}" text-anchor="middle">${escapeXml(xLabel)}</text>`,
    `<text x="14" y="${PAD.top + plotHeight / 2}" text-anchor="middle" transform="rotate(-90 14 ${PAD.top + plotHeight / 2})">${escapeXml(yLabel)}</text>`,
  ].join('');
}

/** A line per series over x = 1…n. */
export function lineChart(options: {
  series: ChartSeries[];
  xLabel: string;
  yLabel: string;
  yMax?: number;
  format?: (v: number) => string;
  title: string;
}): string {
  const format = options.format ?? ((v: number) => v.toLocaleString('en-US'));
  const n = Math.max(1, ...options.series.map((s) => s.values.length));
  const yTicks = ticks(options.yMax ?? Math.max(1, ...options.series.flatMap((s) => s.values)));
  const yMax = yTicks.at(-1)!;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const x = (i: number): number => PAD.left + (n === 1 ? 0 : (i / (n - 1)) * plotWidth);
  const y = (v: number): number => PAD.top + plotHeight - (Math.min(v, yMax) / yMax) * plotHeight;
  const xTicks = ticks(n, 6).filter((t) => t >= 1 && t <= n);
  // Each line is drawn wider than those drawn over it, so that where two arms coincide (the full
  // history and the summarising peer until it first summarises) the one below shows at the edges.
  const width = (i: number): string => (1.6 + 1.4 * (options.series.length - 1 - i)).toFixed(1);
  const lines = options.series.map(
    (s, index) =>
      `<polyline fill="none" stroke="${s.color}" stroke-width="${width(index)}" stroke-linejoin="round" points="${s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"><title>${escapeXml(s.name)}</title></polyline>`,
  );
  return svg(
    options.title,
    axes(yTicks, yMax, format, options.xLabel, options.yLabel) +
      xTicks.map((t) => `<text x="${x(t - 1).toFixed(1)}" y="${HEIGHT - PAD.bottom + 16}" text-anchor="middle">${t}</text>`).join('') +
      lines.join(''),
    options.series,
  );
}

/** For each group, a bar per series (values 0…yMax). */
export function barChart(options: {
  groups: string[];
  series: ChartSeries[];
  yMax: number;
  yLabel: string;
  format?: (v: number) => string;
  title: string;
}): string {
  const format = options.format ?? ((v: number) => String(v));
  const yTicks = ticks(options.yMax);
  const yMax = yTicks.at(-1)!;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const groupWidth = plotWidth / Math.max(1, options.groups.length);
  const barWidth = (groupWidth * 0.8) / Math.max(1, options.series.length);
  const bars = options.groups.flatMap((group, g) =>
    options.series.map((s, i) => {
      const value = s.values[g] ?? 0;
      const h = (Math.min(value, yMax) / yMax) * plotHeight;
      const x = PAD.left + g * groupWidth + groupWidth * 0.1 + i * barWidth;
      return `<rect x="${x.toFixed(1)}" y="${(PAD.top + plotHeight - h).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${s.color}"><title>${escapeXml(`${s.name}, ${group}: ${format(value)}`)}</title></rect>`;
    }),
  );
  const labels = options.groups.map(
    (group, g) =>
      `<text x="${(PAD.left + (g + 0.5) * groupWidth).toFixed(1)}" y="${HEIGHT - PAD.bottom + 16}" text-anchor="middle">${escapeXml(group)}</text>`,
  );
  return svg(options.title, axes(yTicks, yMax, format, '', options.yLabel) + labels.join('') + bars.join(''), options.series);
}

function svg(title: string, body: string, series: ChartSeries[]): string {
  const legend = series
    .map((s) => `<span class="key"><span class="swatch" style="background:${s.color}"></span>${escapeXml(s.name)}</span>`)
    .join('');
  return `<figure><figcaption>${escapeXml(title)}</figcaption><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeXml(title)}">${body}</svg><div class="legend">${legend}</div></figure>`;
}
