/**
 * A short token count right after several major collections, workmem's counter beside
 * gpt-tokenizer's own countTokens: the library clones its split pattern on every call, and
 * V8 compiles a clone afresh once its compilation cache has aged out (src/tokens/bpeCore.ts).
 * Measured in a child with --expose-gc, so that the collections can be forced.
 */
import { spawnSync } from 'node:child_process';
import { built } from './benchmarks.js';
import { median, type Row } from './harness.js';

export function tokenCountAfterCollections(samples: number, collections = 6): Row[] {
  const run = spawnSync(process.execPath, ['--expose-gc', built('test/bench/tokenCountChild.js'), String(samples), String(collections)], {
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`the token count child failed:\n${run.stderr}`);
  const times = JSON.parse(run.stdout) as { workmem: number[]; library: number[] };
  const row = (metric: string, list: number[]): Row => ({
    metric,
    case: `11 tokens, after ${collections} major collections`,
    median: median(list),
    p99: Math.max(...list),
    unit: 'µs',
    target: null,
    met: null,
    note: `(p99 column: the slowest of ${samples})`,
  });
  return [row('Token count, workmem', times.workmem), row("Token count, gpt-tokenizer's countTokens", times.library)];
}
