/**
 * npm run reliability: the whole fault matrix at full size — crash, one writer, disk
 * full, hostile model output, malformed streams, secrets, soak — printed as one table
 * and written to docs/RELIABILITY.md with the figures and any failure, replayable by its
 * seed. Exits non-zero when a case did not survive or anything was lost.
 *
 *   --only <family,...>  run some families (the keys of FAMILIES below)
 *   --no-write           print, leave docs/RELIABILITY.md as it is
 *   (--only with just families of their own section, e.g. postgres, rewrites only those sections)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { machine } from '../bench/harness.js';
import { cliCases } from './cli.js';
import { crashTrials } from './crash.js';
import { damageCases } from './damage.js';
import { diskCases } from './disk.js';
import { guardCases } from './guard.js';
import { hostileCases } from './hostile.js';
import { llmCases } from './llm.js';
import { lockCases } from './lock.js';
import { PG_FULL, postgresCases, postgresSection } from './postgres.js';
import { table, type FamilyResult } from './report.js';
import { secretCases } from './secrets.js';
import { spliceSection } from './section.js';
import { soak } from './soak.js';
import { storeCases } from './store.js';
import { streamCases } from './streams.js';
import { vizCases } from './viz.js';

const FAMILIES: Record<string, () => Promise<FamilyResult>> = {
  crash: () => crashTrials(200, 1),
  lock: () => lockCases(500, 5),
  damage: () => damageCases(),
  disk: () => diskCases(),
  hostile: () => hostileCases(),
  streams: () => streamCases(500),
  secrets: () => secretCases(),
  soak: () => soak(10_000, { every: 1_000 }),
  cli: () => cliCases({ lineSizesMB: [17, 64, 120] }),
  viz: () => vizCases(),
  guard: () => guardCases({ reads: 1500 }),
  llm: () => llmCases({ full: true }),
  store: () => storeCases(40),
  postgres: () => postgresCases(PG_FULL),
};

/** Families with a section of their own: `--only` with just these rewrites their section in docs/RELIABILITY.md. */
const SECTIONS: Record<string, { heading: string; render: (result: FamilyResult, seconds: number) => string }> = {
  postgres: postgresSection,
};

const { values } = parseArgs({ options: { only: { type: 'string' }, 'no-write': { type: 'boolean' } } });
const chosen = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(FAMILIES);
const unknown = chosen.filter((name) => !(name in FAMILIES));
if (unknown.length) {
  process.stderr.write(
    `reliability: unknown famil${unknown.length > 1 ? 'ies' : 'y'} ${unknown.join(', ')}; known: ${Object.keys(FAMILIES).join(', ')}\n`,
  );
  process.exit(2);
}

const started = performance.now();
const results: FamilyResult[] = [];
const all: FamilyResult[] = [];
const sections: [string, string][] = [];
const timings: string[] = [];
for (const name of chosen) {
  const t = performance.now();
  process.stderr.write(`reliability: ${name}…`);
  const result = await FAMILIES[name]!();
  const seconds = (performance.now() - t) / 1000;
  all.push(result);
  const own = SECTIONS[name];
  if (own) sections.push([own.heading, own.render(result, seconds)]);
  else results.push(result);
  timings.push(`${name} ${seconds.toFixed(0)} s`);
  process.stderr.write(` ${seconds.toFixed(1)} s\n`);
}

const rows = results.flatMap((r) => r.rows);
const failures = results.flatMap((r) => r.failures);
const figures = results.flatMap((r) => r.figures ?? []);
const date = new Date().toISOString().slice(0, 10);
const total = (performance.now() - started) / 1000;
const doc = [
  '# Reliability',
  '',
  `Written by \`npm run reliability\` on ${date}, on ${machine()}; ${total.toFixed(0)} s in all (${timings.join(', ')}).`,
  'A fast subset of the same cases runs in `npm test` (test/reliability.test.ts).',
  '',
  '**tried**: faults injected (for hostile paths: tool calls). **survived**: afterwards the session opened, was consistent',
  '(every acknowledged message in the log unchanged, memory files old or new and never torn, a valid message list,',
  'the reminder state agreeing with the log) and a new turn worked; the fault was reported as the row says.',
  '**data lost**: acknowledged messages missing or changed, torn files — for hostile output, files outside',
  'working-memory/ changed or leaked; for secrets, places a key was found. It must be 0.',
  '',
  table(rows),
  '',
  '## Figures',
  '',
  ...(figures.length ? figures.map((f) => `- ${f}`) : ['- (none)']),
  '',
  '## Failures',
  '',
  ...(failures.length ? failures.map((f) => `- ${f.family} / ${f.fault}: ${f.detail}`) : ['None.']),
  '',
  ...sections.map(([, text]) => text),
].join('\n');

process.stdout.write(`${doc}\n`);
if (!values['no-write'] && !values.only) {
  mkdirSync('docs', { recursive: true });
  writeFileSync('docs/RELIABILITY.md', doc);
  process.stderr.write('reliability: written to docs/RELIABILITY.md\n');
} else if (!values['no-write'] && chosen.every((name) => SECTIONS[name]) && existsSync('docs/RELIABILITY.md')) {
  // Only families with their own section: those sections are replaced, the rest kept.
  let kept = readFileSync('docs/RELIABILITY.md', 'utf8');
  for (const [heading, text] of sections) kept = spliceSection(kept, heading, text);
  writeFileSync('docs/RELIABILITY.md', kept);
  process.stderr.write(`reliability: ${sections.map(([h]) => h.slice(3)).join(', ')} written to docs/RELIABILITY.md\n`);
}
const allRows = all.flatMap((r) => r.rows);
const lost = allRows.reduce((n, r) => n + r.lost, 0);
const notSurvived = allRows.reduce((n, r) => n + r.tried - r.survived, 0);
process.stderr.write(`reliability: ${notSurvived} case(s) did not survive, ${lost} lost\n`);
process.exit(notSurvived || lost ? 1 : 0);
