/**
 * Bytes allocated per request, as the log grows: measured in a child process whose young
 * generation is large enough (128 MB semi-spaces) that no collection runs while it counts,
 * so the heap's growth over the requests is what they allocated, short-lived or not. The
 * same child then forces scavenges between batches of requests and reports what they keep:
 * a scavenge's pause (the p99's slow requests) grows with that, not with what was allocated.
 */
import { spawnSync } from 'node:child_process';
import { built } from './benchmarks.js';
import type { Row } from './harness.js';

/** KB per request at `size` messages (tmpfs, trace off): allocated, and kept by two scavenges. */
export function perRequestHeap(size: number, warmup: number, samples: number): { allocated: number; kept: number } {
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
  const [allocated, kept] = child.stdout.trim().split(' ').map(Number) as [number, number];
  return { allocated, kept };
}

/** KB allocated per request at `size` messages in the log (tmpfs, trace off), from a child of its own. */
export function allocatedPerRequest(size: number, warmup: number, samples: number): number {
  return perRequestHeap(size, warmup, samples).allocated;
}

export function allocation(sizes: number[], warmup: number, samples: number): Row[] {
  return sizes.flatMap((size) => {
    const { allocated, kept } = perRequestHeap(size, warmup, samples);
    const at10k = size === 10_000;
    const messages = `${size >= 1000 ? `${size / 1000}k` : size} messages in the log (tmpfs)`;
    return [
      {
        metric: 'Allocated per request',
        case: messages,
        median: allocated,
        p99: null,
        unit: 'KB',
        target: at10k ? '≤ 120 KB' : null,
        met: at10k ? allocated <= 120 : null,
        note: '(heap growth with no collection running, over the requests)',
      },
      {
        metric: 'Kept by scavenges per request',
        case: messages,
        median: kept,
        p99: null,
        unit: 'KB',
        target: null,
        met: null,
        note: `(promoted to the old generation by two forced scavenges; ${Math.round((100 * kept) / allocated)} % of what was allocated)`,
      },
    ];
  });
}
