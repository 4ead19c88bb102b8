/**
 * npm run reliability: the whole fault matrix at full size — crash, one writer, disk
 * full, hostile model output, malformed streams, secrets, soak — printed as one table
 * and written to docs/reliability.md with the figures and any failure, replayable by its
 * seed. Exits non-zero when a case did not survive or anything was lost. The page's
 * hand-written part (what the matrix holds workmem to) is kept: only the generated sections
 * are replaced.
 *
 *   --only <family,...>  run some families (the keys of FAMILIES below)
 *   --no-write           print, leave docs/reliability.md as it is
 *   (--only with just families of their own section, e.g. postgres, rewrites only those sections)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { machine } from '../bench/harness.js';
import { cliCases } from './cli.js';
import { crashTrials } from './crash.js';
import { crashManyTrials } from './crashMany.js';
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
  'crash-many': () => crashManyTrials(12, 100, 1),
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

/** Families with a section of their own: `--only` with just these rewrites their section in docs/reliability.md. */
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
const MATRIX = '## The matrix';
const DOC = 'docs/reliability.md';
const matrix = [
  MATRIX,
  '',
  `Written by \`npm run reliability\` on ${date}, on ${machine()}; ${total.toFixed(0)} s in all (${timings.join(', ')}).`,
  'A fast subset of the same cases runs in `npm test` (test/reliability/reliability.slow.test.ts).',
  '',
  '**tried**: faults injected (for hostile paths: tool calls). **survived**: afterwards the session opened, was consistent',
  '(every acknowledged message in the log unchanged, memory files old or new and never torn, a valid message list,',
  'the reminder state agreeing with the log) and a new turn worked; the fault was reported as the row says.',
  '**data lost**: acknowledged messages missing or changed, torn files — for hostile output, files outside',
  'working-memory/ changed or leaked; for secrets, places a key was found. It must be 0.',
  '',
  table(rows),
  '',
  '### Figures',
  '',
  ...(figures.length ? figures.map((f) => `- ${f}`) : ['- (none)']),
  '',
  '### Failures',
  '',
  ...(failures.length ? failures.map((f) => `- ${f.family} / ${f.fault}: ${f.detail}`) : ['None.']),
  '',
].join('\n');
// Only families of their own section (`--only postgres`): just those sections; otherwise the matrix too.
const onlySections = chosen.every((name) => SECTIONS[name]);
const generated: [string, string][] = onlySections ? sections : [[MATRIX, matrix], ...sections];

process.stdout.write(`${generated.map(([, text]) => text).join('\n')}\n`);
// A partial matrix (`--only crash`) is printed, never written over the whole one.
if (!values['no-write'] && (!values.only || onlySections)) {
  mkdirSync('docs', { recursive: true });
  let kept = existsSync(DOC) ? readFileSync(DOC, 'utf8') : '# Reliability\n';
  for (const [heading, text] of generated) kept = spliceSection(kept, heading, text);
  writeFileSync(DOC, kept);
  process.stderr.write(`reliability: ${generated.map(([h]) => h.slice(3)).join(', ')} written to ${DOC}\n`);
}
const allRows = all.flatMap((r) => r.rows);
const lost = allRows.reduce((n, r) => n + r.lost, 0);
const notSurvived = allRows.reduce((n, r) => n + r.tried - r.survived, 0);
process.stderr.write(`reliability: ${notSurvived} case(s) did not survive, ${lost} lost\n`);
process.exit(notSurvived || lost ? 1 : 0);
