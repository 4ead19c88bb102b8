/**
 * The child of allocation.ts for xstate's floor (xstateFloor.ts): prints, as JSON, the KB a
 * request allocates through the floor chart (`minimal`: the smallest one), measured as
 * allocationChild.ts measures a session's, and the actors and transitions a request makes there.
 */
import { ChartCounts, floorChart } from './xstateFloor.js';

const [warmup, samples, minimal] = process.argv.slice(2).map(Number) as [number, number, number];
const counts = new ChartCounts();
const counted = floorChart(minimal === 1, counts.inspect);
await counted.request();
const [actors, transitions] = [counts.actors, counts.transitions];
await counted.request();
const perRequest = { actors: counts.actors - actors, transitions: counts.transitions - transitions };

const chart = floorChart(minimal === 1);
for (let i = 0; i < warmup; i++) await chart.request();
const gc = (globalThis as { gc?: () => void }).gc!;
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < samples; i++) await chart.request();
const after = process.memoryUsage().heapUsed;
process.stdout.write(`${JSON.stringify({ kb: (after - before) / samples / 1024, ...perRequest })}\n`);
