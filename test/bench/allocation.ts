/**
 * Bytes allocated per request, as the log grows: measured in a child process whose young
 * generation is large enough (128 MB semi-spaces) that no collection runs while it counts,
 * so the heap's growth over the requests is what they allocated, short-lived or not.
 */
import { spawnSync } from 'node:child_process';
import { built } from './benchmarks.js';
import type { Row } from './harness.js';

/** KB allocated per request at `size` messages in the log (tmpfs, trace off), from a child of its own. */
export function allocatedPerRequest(size: number, warmup: number, samples: number): number {
  const child = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--min-semi-space-size=128',
      '--max-semi-space-size=128',
      built('test/bench/allocationChild.js'),
      String(size),
      String(warmup),
      String(samples),
    ],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`the allocation child failed:\n${child.stderr}`);
  return Number(child.stdout.trim());
}

export function allocation(sizes: number[], warmup: number, samples: number): Row[] {
  return sizes.map((size) => {
    const kb = allocatedPerRequest(size, warmup, samples);
    const at10k = size === 10_000;
    return {
      metric: 'Allocated per request',
      case: `${size >= 1000 ? `${size / 1000}k` : size} messages in the log (tmpfs)`,
      median: kb,
      p99: null,
      unit: 'KB',
      target: at10k ? '≤ 120 KB' : null,
      met: at10k ? kb <= 120 : null,
      note: '(heap growth with no collection running, over the requests)',
    };
  });
}
