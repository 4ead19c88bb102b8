/** The child of allocation.ts: one session of `size` messages; prints the KB allocated per request. */
import { rmSync } from 'node:fs';
import { openSession } from '../../src/session/index.js';
import { longSessionIn, zeroLatencyModel } from './benchmarks.js';

const [size, warmup, samples] = process.argv.slice(2).map(Number) as [number, number, number];
const { home, id } = await longSessionIn(size, true);
const session = await openSession(id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
for (let i = 0; i < warmup; i++) await session.prompt(`warm-up ${i}`);
const gc = (globalThis as { gc?: () => void }).gc!;
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < samples; i++) await session.prompt(`Question ${i}: what changed since the last request?`);
const after = process.memoryUsage().heapUsed;
await session.close();
rmSync(home, { recursive: true, force: true });
process.stdout.write(`${(after - before) / samples / 1024}\n`);
