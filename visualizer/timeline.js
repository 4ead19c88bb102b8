// The request timeline: prompt tokens per request, by turn, with the 75 % line and markers
// for reminders, memory writes, mode switches and compactions (in rows, never on one another).

import { el, svgEl } from './dom.js';

const W = 600;
const PLOT_H = 130;
const PAD = { left: 40, right: 8, top: 10 };
const AXIS_H = 16;
const ROW_H = 16;
const MARKER_W = 16;

/**
 * Marker rows: each marker goes in the first row where it clears the one before it, so
 * that none overlaps another.
 */
function markerRows(xs, width = MARKER_W) {
  const ends = [];
  return xs.map((x) => {
    let row = ends.findIndex((end) => end <= x - width);
    if (row < 0) row = ends.length;
    ends[row] = x;
    return row;
  });
}

/** Prompt tokens per request against the window, turns on the x axis, markers below; `pick(step)` on a click. */
export function renderTimeline(box, requests, markers, pick) {
  if (requests.length === 0) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No requests recorded.'));
    return;
  }
  // A trace file can be damaged or forged: what is not a number is drawn as 0, and said as it is.
  const num = (v) => (Number.isFinite(Number(v)) ? Number(v) : 0);
  const window = Math.max(1, ...requests.map((r) => num(r.event.tokens.window)));
  const x = (i) => PAD.left + (requests.length === 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (requests.length - 1));
  const y = (tokens) => PAD.top + (1 - num(tokens) / window) * (PLOT_H - PAD.top);
  const points = requests.map((r, i) => `${x(i)},${y(r.event.tokens.total)}`).join(' ');
  const placed = markers
    .map((m) => ({ m, mx: x(Math.min(requests.length - 1, Math.max(0, m.request - 1))) }))
    .sort((a, b) => a.mx - b.mx);
  const rows = markerRows(placed.map((p) => p.mx));
  const H = PLOT_H + AXIS_H + (Math.max(-1, ...rows) + 1) * ROW_H + 4;
  const chart = svgEl(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'prompt tokens per request, by turn' },
    svgEl(
      'line',
      { class: 'threshold', x1: PAD.left, x2: W - PAD.right, y1: y(window * 0.75), y2: y(window * 0.75) },
      svgEl('title', {}, `75 % of the ${window.toLocaleString()}-token window`),
    ),
    svgEl('text', { class: 'axis', x: 2, y: y(window) + 8 }, `${(window / 1000).toFixed(0)}k`),
    svgEl('text', { class: 'axis', x: 2, y: y(window * 0.75) + 3 }, '75 %'),
    svgEl('text', { class: 'axis', x: 2, y: PLOT_H }, '0'),
    svgEl('line', { class: 'baseline', x1: PAD.left, x2: W - PAD.right, y1: PLOT_H, y2: PLOT_H }),
    svgEl('polyline', { class: 'line', points }),
    svgEl('line', { class: 'cursor', id: 'timeline-cursor', x1: 0, x2: 0, y1: PAD.top, y2: PLOT_H }),
  );
  // The x axis: the turn of each turn's first request, thinned so that labels keep apart.
  chart.append(svgEl('text', { class: 'axis', x: 2, y: PLOT_H + 12 }, 'turn'));
  let lastLabel = -Infinity;
  requests.forEach((r, i) => {
    if (i > 0 && requests[i - 1].event.turn === r.event.turn) return;
    const label = String(r.event.turn);
    const lx = x(i);
    if (lx - lastLabel < 6 + label.length * 6) return;
    lastLabel = lx;
    chart.append(svgEl('line', { class: 'tick', x1: lx, x2: lx, y1: PLOT_H, y2: PLOT_H + 3 }));
    chart.append(svgEl('text', { class: 'axis turn', x: lx, y: PLOT_H + 12, 'text-anchor': 'middle' }, label));
  });
  requests.forEach((r, i) => {
    const t = r.event.tokens;
    const point = svgEl(
      'circle',
      { class: 'point', 'data-index': i, cx: x(i), cy: y(t.total), r: 3.5 },
      svgEl(
        'title',
        {},
        `request ${i + 1} (turn ${r.event.turn}, request ${r.event.request}, ${r.event.mode}): ${t.total.toLocaleString()} tokens, ${t.percent} % of the window`,
      ),
    );
    point.addEventListener('click', () => pick(r.at));
    chart.append(point);
  });
  const glyph = { reminder: '▲', memory: '✎', mode: '⇄', compaction: '⤓' };
  placed.forEach(({ m, mx }, k) => {
    const my = PLOT_H + AXIS_H + rows[k] * ROW_H + 10;
    chart.append(svgEl('text', { class: `marker ${m.kind}`, x: mx, y: my, 'text-anchor': 'middle' }, glyph[m.kind], svgEl('title', {}, markerText(m))));
  });
  box.replaceChildren(chart);
}

function markerText(m) {
  const e = m.event;
  switch (m.kind) {
    case 'reminder':
      return `reminder (${e.level}, ${e.reason}): ${e.rounds} requests since the last memory update, ${e.tokensPercent} %`;
    case 'memory':
      return `memory written: ${e.path}, ${e.bytes} bytes${e.warning ? ` — ${e.warning}` : ''}`;
    case 'mode':
      return `history mode ${e.from} → ${e.to}${e.pinned ? ' (pinned)' : ''}`;
    case 'compaction':
      return `compaction (${e.reason}): ${e.replaced} items, ${e.tokensBefore} → ${e.tokensAfter} tokens → ${[].concat(e.files).join(', ')}`;
  }
  return '';
}

/** Marks request `current` (-1: none yet). */
export function timelineCursor(current) {
  const cursor = document.querySelector('#timeline-cursor');
  if (!cursor) return;
  for (const c of document.querySelectorAll('#timeline .point')) c.classList.toggle('current', Number(c.dataset.index) === current);
  const point = document.querySelector(`#timeline .point[data-index="${current}"]`);
  const cx = point ? point.getAttribute('cx') : '-10';
  cursor.setAttribute('x1', cx);
  cursor.setAttribute('x2', cx);
}
