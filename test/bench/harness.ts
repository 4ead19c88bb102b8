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

const collect = (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc;

/**
 * Collect the young generation (with --expose-gc; else nothing), before a timed call: of
 * calls alternated in one process, each then pays for the collections its own garbage
 * causes, not for the garbage the call before it left.
 */
export function emptyYoungGeneration(): void {
  collect?.({ type: 'minor' });
}

/** Larger than the machines' last-level caches (32 MiB here), allocated when first needed. */
let evictor: Uint8Array | null = null;
let evictions = 0;
let evictingMs = 0;

/**
 * Write over a buffer larger than the CPU's caches. A model call is a wait for the network in
 * which the process does other work: the code around it finds its data cold. Calls alternated
 * in one process on models that answer at once would find what the call before left warm,
 * and their difference would measure their order.
 */
export function coldCaches(): void {
  const start = now();
  evictor ??= new Uint8Array(36 << 20);
  evictor.fill(++evictions & 0xff);
  evictingMs += now() - start;
}

/** The time coldCaches has taken so far, in ms: a timed call's own time leaves it out. */
export function coldCachesMs(): number {
  return evictingMs;
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

/**
 * Runs benchmark steps in order, each timed on stderr; prints one markdown table headed by
 * the date, the machine and the whole run's time, and writes the same figures to `file`.
 */
export async function runBench(title: string, steps: [string, () => Promise<Row[]> | Row[]][], file: string): Promise<void> {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { dirname } = await import('node:path');
  const started = now();
  const rows: Row[] = [];
  for (const [name, run] of steps) {
    const t = now();
    process.stderr.write(`bench: ${name}…`);
    rows.push(...(await run()));
    process.stderr.write(` ${((now() - t) / 1000).toFixed(1)} s\n`);
  }
  const date = new Date().toISOString().slice(0, 10);
  const seconds = (now() - started) / 1000;
  process.stdout.write(`${title}: measured ${date} on ${machine()} (${seconds.toFixed(0)} s in all)\n\n${table(rows)}\n`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ date, machine: machine(), seconds, rows }, null, 2)}\n`);
  const missed = rows.filter((r) => r.met === false);
  process.stderr.write(
    missed.length
      ? `bench: ${missed.length} target(s) missed: ${missed.map((r) => `${r.metric} (${r.case})`).join('; ')}\n`
      : 'bench: every target met\n',
  );
}
