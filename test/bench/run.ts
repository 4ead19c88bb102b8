/**
 * npm run bench: every benchmark at full size; prints one markdown table and writes the
 * same figures to bench/results.json. A missed target is reported as missed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cliStart, FULL, itemMemory, orchestrationOverhead, resume, throughput, tokenEfficiency, traceCost } from './benchmarks.js';
import { machine, now, table, type Row } from './harness.js';
import { cacheEconomics } from './cacheEconomics.js';
import { hostLoopOverhead } from './hostLoopBench.js';
import { PG_LOAD_FULL, postgresLoad } from './postgresLoad.js';

const started = now();
const rows: Row[] = [];
const steps: [string, () => Promise<Row[]> | Row[]][] = [
  ['orchestration overhead', () => orchestrationOverhead(FULL)],
  ['host loop and middleware overhead', () => hostLoopOverhead(FULL)],
  ['resume', () => resume(FULL)],
  ['throughput', () => throughput(FULL)],
  ['token efficiency and prefix stability', () => tokenEfficiency(FULL)],
  ['trace cost', () => traceCost(FULL)],
  ['CLI start', () => cliStart(FULL)],
  ['item memory', () => itemMemory(FULL)],
  ['cache economics', () => cacheEconomics(FULL.efficiencyTurns)],
  ['Postgres load', () => postgresLoad(PG_LOAD_FULL)],
];
for (const [name, run] of steps) {
  const t = now();
  process.stderr.write(`bench: ${name}…`);
  rows.push(...(await run()));
  process.stderr.write(` ${((now() - t) / 1000).toFixed(1)} s\n`);
}
const date = new Date().toISOString().slice(0, 10);
const header = `Benchmarks of ${date} on ${machine()} (${((now() - started) / 1000).toFixed(0)} s in all)`;
process.stdout.write(`${header}\n\n${table(rows)}\n`);
mkdirSync('bench', { recursive: true });
writeFileSync('bench/results.json', `${JSON.stringify({ date, machine: machine(), rows }, null, 2)}\n`);
const missed = rows.filter((r) => r.met === false);
process.stderr.write(
  missed.length
    ? `bench: ${missed.length} target(s) missed: ${missed.map((r) => `${r.metric} (${r.case})`).join('; ')}\n`
    : 'bench: every target met\n',
);
