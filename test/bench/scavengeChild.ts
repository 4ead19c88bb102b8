/**
 * The child of allocation.ts for what scavenges keep: one session of `size` messages with
 * V8's default young generation and `--trace-gc-nvp`, whose lines (one per collection, on
 * stdout) allocation.ts reads between the two marks this child prints around its requests.
 */
import { rmSync } from 'node:fs';
import { openSession } from '../../src/session/index.js';
import { END_MARK, START_MARK } from './allocation.js';
import { longSessionIn, zeroLatencyModel } from './benchmarks.js';

const [size, warmup, samples] = process.argv.slice(2).map(Number) as [number, number, number];
const { home, id } = await longSessionIn(size, true);
const session = await openSession(id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
for (let i = 0; i < warmup; i++) await session.prompt(`warm-up ${i}`);
process.stdout.write(`${START_MARK}\n`);
for (let i = 0; i < samples; i++) await session.prompt(`Question ${i}: what changed since the last request?`);
process.stdout.write(`${END_MARK}\n`);
await session.close();
rmSync(home, { recursive: true, force: true });
