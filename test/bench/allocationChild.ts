/**
 * The child of allocation.ts: one session of `size` messages; prints the KB allocated per
 * request, then the KB per request that two scavenges keep (what they promote to the old
 * generation: a scavenge's pause grows with what it keeps, not with what was allocated).
 */
import { rmSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import { openSession } from '../../src/session/index.js';
import { longSessionIn, zeroLatencyModel } from './benchmarks.js';
import { median } from './harness.js';

const [size, warmup, samples] = process.argv.slice(2).map(Number) as [number, number, number];
const { home, id } = await longSessionIn(size, true);
const session = await openSession(id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
const ask = (i: number): Promise<unknown> => session.prompt(`Question ${i}: what changed since the last request?`);
for (let i = 0; i < warmup; i++) await session.prompt(`warm-up ${i}`);
const gc = (globalThis as { gc?: (options?: { type: 'minor' | 'major' }) => void }).gc!;
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < samples; i++) await ask(i);
const after = process.memoryUsage().heapUsed;

// Kept by scavenges: batches of requests, each followed by two forced scavenges (the young
// generation is too large for one of its own), counting the old generation's growth.
const old = (): number =>
  getHeapSpaceStatistics()
    .filter((s) => s.space_name === 'old_space' || s.space_name === 'large_object_space')
    .reduce((sum, s) => sum + s.space_used_size, 0);
const batch = Math.max(1, Math.min(50, Math.floor(samples / 6)));
const kept: number[] = [];
gc();
let mark = old();
for (let round = 0; round < 6; round++) {
  for (let i = 0; i < batch; i++) await ask(i);
  gc({ type: 'minor' });
  gc({ type: 'minor' });
  const now = old();
  kept.push((now - mark) / batch / 1024);
  mark = now;
}
await session.close();
rmSync(home, { recursive: true, force: true });
process.stdout.write(`${(after - before) / samples / 1024} ${median(kept)}\n`);
