/**
 * The report's line chart, where two arms coincide (issue 36: the full-history line was hidden
 * under the summarising peer's until it first summarised): each line is drawn wider than the
 * ones drawn over it, so the one below still shows at the edges.
 */
import { describe, expect, it } from 'vitest';
import { lineChart } from '../../src/eval/svgCharts.js';

describe('lineChart', () => {
  it('draws coinciding lines so that each stays visible: the earlier drawn, the wider', () => {
    const values = [100, 200, 300, 400];
    const svg = lineChart({
      title: 'tokens',
      xLabel: 'turn',
      yLabel: 'tokens',
      series: [
        { name: 'workmem', color: '#1f77b4', values: [50, 60, 70, 80] },
        { name: 'full history', color: '#d62728', values },
        { name: 'summarise at 75 %', color: '#2ca02c', values },
      ],
    });
    const drawn = [...svg.matchAll(/<polyline [^>]*stroke="([^"]+)" stroke-width="([\d.]+)"[^>]*points="([^"]+)"/g)].map((m) => ({
      color: m[1],
      width: Number(m[2]),
      points: m[3],
    }));
    expect(drawn.map((d) => d.color)).toEqual(['#1f77b4', '#d62728', '#2ca02c']);
    const [, full, summarise] = drawn;
    expect(full!.points).toBe(summarise!.points); // the same line…
    expect(full!.width).toBeGreaterThan(summarise!.width + 1); // …and the one below shows a pixel on each side
    expect(drawn.map((d) => d.width)).toEqual([...drawn.map((d) => d.width)].sort((a, b) => b - a));
  });
});
