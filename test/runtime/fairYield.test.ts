/**
 * Sessions sharing the event loop (fairYield.ts): work that goes on in slices lets the loop
 * turn between them, so a timer or a socket is served while it runs; a short stretch of work
 * goes straight on.
 */
import { describe, expect, it } from 'vitest';
import { yieldIfBusy } from '../../src/runtime/fairYield.js';

/** Busy for about `ms` of CPU. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('yieldIfBusy', () => {
  it('lets the loop turn while many tasks run in slices', async () => {
    const done: number[] = [];
    let slices = 0;
    let whenTimerFired = -1;
    setTimeout(() => (whenTimerFired = slices), 0);
    const total = 100 * 20;
    await Promise.all(
      Array.from({ length: 100 }, async (_, task) => {
        for (let step = 0; step < 20; step++) {
          spin(0.05);
          slices++;
          await yieldIfBusy();
        }
        done.push(task);
      }),
    );
    expect(whenTimerFired, 'the timer fired while slices were left').toBeGreaterThanOrEqual(0);
    expect(whenTimerFired).toBeLessThan(total);
    expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('costs nothing while the loop is idle: a short stretch goes straight on', async () => {
    // A turn of the loop first: what ran before this test is another stretch.
    await new Promise((resolve) => setImmediate(resolve));
    let resumed = false;
    const next = yieldIfBusy().then(() => (resumed = true));
    await Promise.resolve();
    await Promise.resolve();
    expect(resumed).toBe(true);
    await next;
  });
});
