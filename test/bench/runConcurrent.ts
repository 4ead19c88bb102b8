/**
 * npm run bench:concurrent: many sessions at once in one process (concurrentBench.ts); the
 * table of cells and the targets, the same figures in bench/results-concurrent.json.
 * `-- --smoke` runs it tiny; `-- --sessions 1,100 --stores disk --doors serve --turns 500`
 * runs some of its cells; `-- --old <checkout, built>` runs each cell on that code too, just
 * before this one's (before and after in one run).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CONCURRENT_FULL,
  CONCURRENT_SMOKE,
  concurrentBench,
  concurrentReport,
  thisCode,
  type ConcurrentScale,
  type Door,
  type Where,
} from './concurrentBench.js';
import { now, table } from './harness.js';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean' },
    sessions: { type: 'string' },
    stores: { type: 'string' },
    doors: { type: 'string' },
    turns: { type: 'string' },
    long: { type: 'string' },
    old: { type: 'string' },
  },
});
const list = (value: string | undefined) => value?.split(',').filter(Boolean);
const base = values.smoke ? CONCURRENT_SMOKE : CONCURRENT_FULL;
const scale: ConcurrentScale = {
  ...base,
  ...(values.sessions ? { sessions: list(values.sessions)!.map(Number) } : {}),
  ...(values.stores ? { stores: list(values.stores) as Where[] } : {}),
  ...(values.doors ? { doors: list(values.doors) as Door[] } : {}),
  ...(values.turns ? { turns: Number(values.turns) } : {}),
  ...(values.long ? { longMessages: Number(values.long) } : {}),
};
const started = now();
// `--old <checkout>` (built): each cell is run on it too, right before this checkout's.
const codes = values.old ? [{ label: 'old', root: resolve(values.old) }, thisCode()] : [thisCode()];
const result = await concurrentBench(scale, (line) => process.stderr.write(`${line}\n`), codes);
const report = concurrentReport(result);
const date = new Date().toISOString().slice(0, 10);
const seconds = (now() - started) / 1000;
process.stdout.write(
  `npm run bench:concurrent: measured ${date} (${seconds.toFixed(0)} s in all)\n\n${report.table}\n\n${table(report.rows)}\n`,
);
mkdirSync('bench', { recursive: true });
writeFileSync('bench/results-concurrent.json', `${JSON.stringify({ date, seconds, ...result, rows: report.rows }, null, 2)}\n`);
const missed = report.rows.filter((r) => r.met === false);
process.stderr.write(missed.length ? `bench: ${missed.length} target(s) missed\n` : 'bench: every target met\n');
