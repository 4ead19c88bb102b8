/**
 * The child of allocation.ts: one session of `size` messages; prints, as JSON, the KB
 * allocated per request and the actors and transitions a request makes (counted first,
 * in a session opened with an inspector, as the inspector allocates too).
 */
import { rmSync } from 'node:fs';
import { openSession, type OpenOptions } from '../../src/session/index.js';
import { longSessionIn, zeroLatencyModel } from './benchmarks.js';
import { ChartCounts } from './xstateFloor.js';

const [size, warmup, samples] = process.argv.slice(2).map(Number) as [number, number, number];
const { home, id } = await longSessionIn(size, true);
const options: OpenOptions = { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } };

const counts = new ChartCounts();
const inspected = await openSession(id, { ...options, inspect: counts.inspect });
await inspected.prompt('Counted: the first request');
const [actors, transitions] = [counts.actors, counts.transitions];
await inspected.prompt('Counted: the second request');
const perRequest = { actors: counts.actors - actors, transitions: counts.transitions - transitions };
await inspected.close();

const session = await openSession(id, options);
for (let i = 0; i < warmup; i++) await session.prompt(`warm-up ${i}`);
const gc = (globalThis as { gc?: () => void }).gc!;
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < samples; i++) await session.prompt(`Question ${i}: what changed since the last request?`);
const after = process.memoryUsage().heapUsed;
await session.close();
rmSync(home, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ kb: (after - before) / samples / 1024, ...perRequest })}\n`);
