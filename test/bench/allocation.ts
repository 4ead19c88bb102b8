/**
 * Bytes allocated per request, as the log grows: measured in a child process whose young
 * generation is large enough (128 MB semi-spaces) that no collection runs while it counts,
 * so the heap's growth over the requests is what they allocated, short-lived or not. And
 * what scavenges keep per request, in a child with V8's default young generation: a
 * scavenge's pause (the p99's slow requests) grows with what it keeps, not with what was
 * allocated. Beside them, what xstate alone allocates for the same chart (xstateFloor.ts).
 */
import { spawnSync } from 'node:child_process';
import { built } from './benchmarks.js';
import { median, type Row } from './harness.js';

/** The scavenge child's marks around its timed requests (its stdout also carries V8's GC lines). */
export const START_MARK = 'workmem-bench: timed requests start';
export const END_MARK = 'workmem-bench: timed requests end';

function child(flags: string[], script: string, args: number[]): string {
  const run = spawnSync(process.execPath, [...flags, built(script), ...args.map(String)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`the ${script} child failed:\n${run.stderr}`);
  return run.stdout;
}

/** What a request allocates, and the actors and transitions it makes (xstate's inspection events). */
export interface RequestAllocation {
  kb: number;
  actors: number;
  transitions: number;
}

/** No collection while the requests are counted: the heap's growth is what they allocated. */
const NO_SCAVENGE = ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128'];

/** KB allocated per request at `size` messages in the log (tmpfs, trace off), from a child of its own. */
export function allocatedPerRequest(size: number, warmup: number, samples: number): RequestAllocation {
  return JSON.parse(child(NO_SCAVENGE, 'test/bench/allocationChild.js', [size, warmup, samples])) as RequestAllocation;
}

/** The same for xstate alone, through the chart of xstateFloor.ts (`minimal`: the smallest DESIGN.md allows). */
export function xstateFloorPerRequest(warmup: number, samples: number, minimal: boolean): RequestAllocation {
  return JSON.parse(child(NO_SCAVENGE, 'test/bench/xstateFloorChild.js', [warmup, samples, minimal ? 1 : 0])) as RequestAllocation;
}

const shape = (a: RequestAllocation) => `${a.actors} actors, ${a.transitions} transitions a request`;

/**
 * What the scavenges during `samples` requests kept (promoted to the old generation), in KB
 * per request, how many scavenges ran and their median pause; from V8's own GC trace.
 */
export function keptByScavenges(
  size: number,
  warmup: number,
  samples: number,
  v8Flags: string[] = [],
): { kept: number; scavenges: number; pauseMs: number } {
  const out = child(['--trace-gc-nvp', ...v8Flags], 'test/bench/scavengeChild.js', [size, warmup, samples]);
  const timed = out.slice(out.indexOf(START_MARK), out.indexOf(END_MARK));
  const scavenges = timed
    .split('\n')
    .filter((line) => / gc=s /.test(line))
    .map((line) => ({ promoted: Number(/ promoted=(\d+)/.exec(line)?.[1]), pause: Number(/ pause=([\d.]+)/.exec(line)?.[1]) }));
  if (scavenges.some((s) => !Number.isFinite(s.promoted) || !Number.isFinite(s.pause)))
    throw new Error('V8 changed its --trace-gc-nvp lines: promoted= or pause= is missing');
  const promoted = scavenges.reduce((sum, s) => sum + s.promoted, 0);
  return { kept: promoted / samples / 1024, scavenges: scavenges.length, pauseMs: median(scavenges.map((s) => s.pause)) };
}

/**
 * The allocation rows at each size: `warmup` and `samples` for what is allocated (the young
 * generation must hold all of it), `scavenging` for what scavenges keep (enough requests for
 * many scavenges, after V8 has decided which allocation sites to pretenure).
 */
export function allocation(sizes: number[], warmup: number, samples: number, scavenging = { warmup: 300, samples: 1500 }): Row[] {
  const floor = xstateFloorPerRequest(warmup, samples, false);
  const smallest = xstateFloorPerRequest(warmup, samples, true);
  const perSize = sizes.flatMap((size) => {
    const allocated = allocatedPerRequest(size, warmup, samples);
    const at10k = size === 10_000;
    const messages = `${size >= 1000 ? `${size / 1000}k` : size} messages in the log (tmpfs)`;
    const keptRow = (metric: string, flags: string[]): Row => {
      const { kept, scavenges, pauseMs } = keptByScavenges(size, scavenging.warmup, scavenging.samples, flags);
      return {
        metric,
        case: messages,
        median: kept,
        p99: null,
        unit: 'KB',
        target: null,
        met: null,
        note: `(promoted to the old generation, default young generation: ${scavenges} scavenges in ${scavenging.samples} requests, ${scavenges ? `median pause ${pauseMs} ms` : 'none ran'})`,
      };
    };
    return [
      {
        metric: 'Allocated per request',
        case: messages,
        median: allocated.kb,
        p99: null,
        unit: 'KB',
        target: at10k ? '≤ 120 KB' : null,
        met: at10k ? allocated.kb <= 120 : null,
        note: `(heap growth with no collection running, over the requests; ${shape(allocated)})`,
      },
      keptRow('Kept by scavenges per request', []),
      keptRow('Kept by scavenges per request, V8 pretenuring off', ['--no-allocation-site-pretenuring']),
    ];
  });
  return [
    ...perSize,
    {
      metric: 'Allocated per request, xstate alone',
      case: 'the same chart, no work in it (test/bench/xstateFloor.ts)',
      median: floor.kb,
      p99: null,
      unit: 'KB',
      target: null,
      met: null,
      note: `(measured as the rows above; ${shape(floor)}, one-field contexts, actors that resolve at once)`,
    },
    {
      metric: 'Allocated per request, xstate alone',
      case: 'the smallest chart DESIGN.md allows, no work in it',
      median: smallest.kb,
      p99: null,
      unit: 'KB',
      target: null,
      met: null,
      note: `(the session runs the turn only, the turn opens in loadMemory: ${shape(smallest)})`,
    },
  ];
}
