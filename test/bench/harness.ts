/**
 * Benchmark plumbing: timing, order statistics, the machine, and the results table.
 * Every figure is a median or percentile over many samples after a warm-up, and ratios
 * are measured in the same run (the machines here are noisy).
 */
import { cpus, totalmem } from 'node:os';

export interface Row {
  /** e.g. "Orchestration overhead per request". */
  metric: string;
  /** e.g. "10k messages". */
  case: string;
  median: number | null;
  p99: number | null;
  unit: string;
  /** A target in words ("median ≤ 1 ms") and whether it was met; null when there is none. */
  target: string | null;
  met: boolean | null;
  note?: string;
}

export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export const median = (samples: number[]): number => quantile(samples, 0.5);
export const p99 = (samples: number[]): number => quantile(samples, 0.99);

export function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
}

function fmt(value: number | null, unit: string): string {
  if (value === null || Number.isNaN(value)) return '—';
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : value >= 1 ? 2 : 3;
  return `${value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 })} ${unit}`;
}

export function table(rows: Row[]): string {
  const head = '| metric | case | median | p99 | target | |\n|---|---|---|---|---|---|';
  const lines = rows.map((r) => {
    const status = r.met === null ? '' : r.met ? 'met' : '**missed**';
    return `| ${r.metric} | ${r.case} | ${fmt(r.median, r.unit)} | ${fmt(r.p99, r.unit)} | ${r.target ?? ''} | ${status}${r.note ? ` ${r.note}` : ''} |`;
  });
  return [head, ...lines].join('\n');
}
