/**
 * Many sessions share one event loop. A session's work goes on in slices, and a slice that
 * comes after a long stretch of work lets the loop turn first (timers, sockets, the other
 * sessions' slices), so that no session holds the loop for more than about BUDGET_MS at a
 * time however many run at once. `yieldIfBusy()` is called at a turn's seams (a storage
 * write done, a chunk of a long conversation taken in): it resolves at once while the
 * current stretch is short, else in a later turn of the loop, first come first served, at
 * most BUDGET_MS of resumed work per turn.
 *
 * A stretch begins with the first call after the loop last went round and ends at the
 * loop's next check phase (a setImmediate marker); resumed slices are one setImmediate
 * each, so that each runs its microtasks before the budget is looked at again, and those
 * over the budget wait for the next turn of the loop, in order.
 */
const BUDGET_MS = 1;

/** When the current stretch of work began (performance.now()); 0: none is open. */
let busySince = 0;
const waiting: (() => void)[] = [];
const RESOLVED: Promise<void> = Promise.resolve();

function endStretch(): void {
  busySince = 0;
}

/** The time spent in the current stretch, opening one if none is. */
function busyFor(): number {
  const t = performance.now();
  if (busySince === 0) {
    busySince = t;
    setImmediate(endStretch);
  }
  return t - busySince;
}

/** Resolves at once while the loop's current stretch is short; else in a later turn of the loop, in order. */
export function yieldIfBusy(): Promise<void> {
  if (busyFor() < BUDGET_MS) return RESOLVED;
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    topUp();
  });
}

/** Resumers queued for a check phase: enough for a turn's budget, never one per waiter (a thousand would all run each turn). */
const PER_TURN = 64;
let scheduled = 0;

function topUp(): void {
  while (scheduled < Math.min(waiting.length, PER_TURN)) {
    scheduled++;
    setImmediate(resumeOne);
  }
}

function resumeOne(): void {
  scheduled--;
  // Over the budget: the waiter stays first in line for the next turn of the loop.
  if (busyFor() < BUDGET_MS) waiting.shift()?.();
  topUp();
}
