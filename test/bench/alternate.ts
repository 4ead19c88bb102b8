/**
 * Old code against new, alternated in one run on one machine (`npm run bench:alternate --
 * <old checkout>`, the old one built): each round runs the same overhead measurement in a
 * child process of each checkout in turn — per request at 100 and 10k messages, on tmpfs and
 * on disk (at 10k also with V8's pretenuring off, as workmem's own processes run), the log's
 * syncs per turn, and the bytes allocated per request — and the table gives
 * each figure's median over the rounds, old beside new. The child imports only the
 * package's own session API, which both sides share. With a fourth argument `telemetry` the
 * new side's sessions report to OpenTelemetry's SDK (a batching span processor and a metric
 * reader, their exporters dropping what they get: the SDK's cost, not a network's), so the
 * same checkout twice gives the cost of telemetry on against off.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { machine, median } from './harness.js';

const CHILD = `
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const [root, size, where, warmup, samples, mode, traced] = process.argv.slice(2);
const { createSession, openSession } = await import(root + '/dist/src/session/index.js');
const { loadTokenCounter } = await import(root + '/dist/src/tokens/tokens.js');
const { longHistoryEntries, zeroLatencyModel, LONG_HISTORY_ARCHIVE } = await import(root + '/dist/test/bench/benchmarks.js');
const home = mkdtempSync(join(where === 'tmpfs' ? '/dev/shm' : tmpdir(), 'workmem-alt-'));
const first = await createSession({ llm: zeroLatencyModel(), home, cwd: '/bench', env: {}, trace: false });
const { id, dir } = first;
await first.close();
const lines = longHistoryEntries(Number(size), 0, await loadTokenCounter('gpt-4o'));
writeFileSync(join(dir, 'working-memory', LONG_HISTORY_ARCHIVE), '# Archived\\n');
appendFileSync(join(dir, 'messages.jsonl'), lines.join('\\n') + '\\n');
let telemetry;
if (traced === 'on') {
  const sdk = (name) => import(pathToFileURL(createRequire(root + '/package.json').resolve(name)).href);
  const { BasicTracerProvider, BatchSpanProcessor } = await sdk('@opentelemetry/sdk-trace-base');
  const { MeterProvider, PeriodicExportingMetricReader } = await sdk('@opentelemetry/sdk-metrics');
  const dropped = { export: (items, done) => done({ code: 0 }), forceFlush: async () => {}, shutdown: async () => {} };
  telemetry = {
    tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] }),
    meterProvider: new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: dropped, exportIntervalMillis: 1000 })] }),
  };
}
const session = await openSession(id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true }, ...(telemetry ? { telemetry } : {}) });
for (let i = 0; i < Number(warmup); i++) await session.prompt('warm-up ' + i);
const out = {};
if (mode === 'alloc') {
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < Number(samples); i++) await session.prompt('Question ' + i + ': what changed since the last request?');
  out.kb = (process.memoryUsage().heapUsed - before) / Number(samples) / 1024;
} else {
  const times = [];
  const log = session.record.storage.log;
  const syncsBefore = log.syncs;
  for (let i = 0; i < Number(samples); i++) {
    const t = performance.now();
    await session.prompt('Question ' + i + ': what changed since the last request?');
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  out.median = times[Math.floor(times.length / 2)];
  out.p99 = times[Math.min(times.length - 1, Math.floor(times.length * 0.99))];
  out.syncs = log.syncs === undefined ? null : (log.syncs - syncsBefore) / Number(samples);
}
await session.close();
rmSync(home, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out));
`;

const [oldRoot, newRoot = process.cwd(), rounds = '5', telemetry] = process.argv.slice(2);
if (!oldRoot || (telemetry !== undefined && telemetry !== 'telemetry'))
  throw new Error('usage: npm run bench:alternate -- <old checkout, built> [new checkout] [rounds] [telemetry]');
const child = join(tmpdir(), `workmem-alternate-${process.pid}.mjs`);
writeFileSync(child, CHILD);
// 'cli': with V8's allocation-site pretenuring off, as workmem's own processes run (src/cli/engineFlags.ts).
const cases = [
  ['100', 'tmpfs', 'default'],
  ['10000', 'tmpfs', 'default'],
  ['100', 'disk', 'default'],
  ['10000', 'disk', 'default'],
  ['10000', 'tmpfs', 'cli'],
  ['10000', 'disk', 'cli'],
] as const;
type Figures = { median?: number; p99?: number; syncs?: number | null; kb?: number };
const results = new Map<string, Figures[]>();
const run = (
  root: string,
  size: string,
  where: string,
  mode: 'time' | 'alloc',
  engine: 'default' | 'cli' = 'default',
  traced = false,
): Figures => {
  const flags = mode === 'alloc' ? ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128'] : ['--expose-gc'];
  if (engine === 'cli') flags.push('--no-allocation-site-pretenuring');
  const done = spawnSync(
    process.execPath,
    [
      ...flags,
      child,
      resolve(root),
      size,
      where,
      mode === 'alloc' ? '50' : '300',
      mode === 'alloc' ? '300' : '1500',
      mode,
      traced ? 'on' : 'off',
    ],
    {
      encoding: 'utf8',
    },
  );
  if (done.status !== 0) throw new Error(`${root} ${size} ${where}: ${done.stderr}`);
  return JSON.parse(done.stdout) as Figures;
};
for (let round = 0; round < Number(rounds); round++) {
  for (const [side, root] of [
    ['old', oldRoot],
    ['new', newRoot],
  ] as const) {
    for (const [size, where, engine] of cases) {
      const key = `${side} ${size} ${where} ${engine}`;
      results.set(key, [...(results.get(key) ?? []), run(root, size, where, 'time', engine, side === 'new' && !!telemetry)]);
    }
    for (const size of ['100', '10000']) {
      const key = `${side} ${size} alloc`;
      results.set(key, [...(results.get(key) ?? []), run(root, size, 'tmpfs', 'alloc', 'default', side === 'new' && !!telemetry)]);
    }
  }
  process.stderr.write(`round ${round + 1} of ${rounds}\n`);
}
const med = (key: string, field: keyof Figures): string => {
  const values = (results.get(key) ?? []).map((f) => f[field]).filter((v): v is number => typeof v === 'number');
  return values.length ? median(values).toFixed(field === 'kb' ? 0 : 2) : '—';
};
const lines = [
  `Old (${oldRoot}) and new (${newRoot}${telemetry ? ', telemetry on' : ''}) alternated ${rounds} times, ${new Date().toISOString().slice(0, 10)} on ${machine()}`,
  '',
];
lines.push('| case | old median | new median | old p99 | new p99 | old syncs/turn | new syncs/turn |', '|---|---|---|---|---|---|---|');
for (const [size, where, engine] of cases) {
  const k = (side: string) => `${side} ${size} ${where} ${engine}`;
  lines.push(
    `| ${Number(size) >= 1000 ? `${Number(size) / 1000}k` : size} messages, ${where}${engine === 'cli' ? ', as the CLI runs (pretenuring off)' : ''} | ${med(k('old'), 'median')} ms | ${med(k('new'), 'median')} ms | ${med(k('old'), 'p99')} ms | ${med(k('new'), 'p99')} ms | ${med(k('old'), 'syncs')} | ${med(k('new'), 'syncs')} |`,
  );
}
lines.push('', '| allocated per request | old | new |', '|---|---|---|');
for (const size of ['100', '10000'])
  lines.push(
    `| ${Number(size) >= 1000 ? '10k' : size} messages | ${med(`old ${size} alloc`, 'kb')} KB | ${med(`new ${size} alloc`, 'kb')} KB |`,
  );
process.stdout.write(`${lines.join('\n')}\n`);
