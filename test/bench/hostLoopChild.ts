/**
 * The child of hostLoopBench.ts: one door's phase at one size, in a process of its own (its
 * heap holds that door's conversations alone); the times of its steps as JSON.
 */
import { hostLoopPhase, type Door } from './hostLoopBench.js';

const { door, size, warmup, samples } = JSON.parse(process.argv[2]!) as { door: Door; size: number; warmup: number; samples: number };
process.stdout.write(JSON.stringify(await hostLoopPhase(door, size, { warmup, samples })));
