/**
 * The floor plan, checked: machines/ stays pure (nothing it imports, however indirectly,
 * reaches the disk, the network or the parts of src/ that do), events.ts is a leaf, no
 * file grows past 350 lines without saying why, and the CLI's files import no circle.
 * The scanner itself is tried first on a small tree whose answers are known.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findCycle, forbiddenReach, importsOf, relativeTo, topCommentLines, type Violation } from './importGraph.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What a machine must never reach: the disk, the network, a child process, a database. */
const IMPURE_PACKAGES = new Set([
  'fs',
  'net',
  'http',
  'https',
  'http2',
  'tls',
  'dgram',
  'dns',
  'child_process',
  'ws',
  'openai',
  'pg',
  'keyv',
]);
/** The parts of src/ that do I/O by design. */
const IMPURE_FOLDERS = ['src/storage/', 'src/actors/', 'src/session/'];
const MAX_LINES = 350;
const SIZE_REASON = 'Over 350 lines:';

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

function impureReach(root: string, files: string[]): Violation[] {
  const show = relativeTo(root);
  return forbiddenReach(
    files,
    {
      packages: IMPURE_PACKAGES,
      files: (file) => IMPURE_FOLDERS.some((folder) => show(file).startsWith(folder)),
    },
    show,
  );
}

const explain = (violations: Violation[]): string[] => violations.map((v) => v.chain.join(' → '));

/** The files over the limit whose opening comment gives no reason. */
function oversized(files: string[], show: (f: string) => string): string[] {
  return files.flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines <= MAX_LINES) return [];
    const reason = topCommentLines(text).find((l) => l.startsWith(SIZE_REASON));
    return reason && reason.slice(SIZE_REASON.length).trim() ? [] : [`${show(file)}: ${lines} lines`];
  });
}

describe('the scanner, on a tree whose answers are known', () => {
  const dir = mkdtempSync(join(tmpdir(), 'workmem-arch-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (path: string, text: string): string => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
    return join(dir, path);
  };
  const chart = write(
    'machines/chart.ts',
    "import { plan } from '../src/plan/plan.js';\nimport type { Row } from '../src/storage/rows.js';\nexport const x = plan;\n",
  );
  write(
    'src/plan/plan.ts',
    "import { type Shape, read } from './disk.js';\nexport const plan = read;\nexport type { Shape } from './disk.js';\n",
  );
  write('src/plan/disk.ts', "import { readFileSync } from 'node:fs';\nexport type Shape = string;\nexport const read = readFileSync;\n");
  write('src/storage/rows.ts', "import { open } from 'node:fs/promises';\nexport type Row = string;\nexport const o = open;\n");
  const pure = write(
    'machines/pure.ts',
    "import { type Shape } from '../src/plan/disk.js';\nexport type { Row } from '../src/storage/rows.js';\nexport const y: Shape = '';\n",
  );
  const lazy = write('machines/lazy.ts', "export const z = () => import('../src/session/host.js');\n");
  write('src/session/host.ts', 'export const h = 1;\n');
  const lost = write('machines/lost.ts', "import { gone } from './gone.js';\nexport const g = gone;\n");

  it('follows value imports two levels down to node:fs, and names the chain', () => {
    expect(explain(impureReach(dir, [chart]))).toEqual(['machines/chart.ts → src/plan/plan.ts → src/plan/disk.ts → node:fs']);
  });

  it('skips `import type`, `export type` and all-type named imports; counts mixed ones', () => {
    expect(importsOf(chart).map((r) => [r.specifier, r.typeOnly])).toEqual([
      ['../src/plan/plan.js', false],
      ['../src/storage/rows.js', true],
    ]);
    expect(importsOf(join(dir, 'src/plan/plan.ts')).map((r) => r.typeOnly)).toEqual([false, true]);
    expect(impureReach(dir, [pure])).toEqual([]);
  });

  it('counts a dynamic import, reports a forbidden folder, and never skips what it cannot find', () => {
    expect(explain(impureReach(dir, [lazy]))).toEqual(['machines/lazy.ts → src/session/host.ts']);
    expect(explain(impureReach(dir, [lost]))).toEqual(['machines/lost.ts → ./gone.js (not found)']);
  });

  it('finds a circle, and reads a reason from the opening comment', () => {
    const a = write('cli/a.ts', "import { b } from './b.js';\nexport const a = b;\n");
    const b = write('cli/b.ts', "import type { c } from './c.js';\nexport const b = 1;\n");
    const c = write('cli/c.ts', "import { a } from './a.js';\nexport const c = a;\n");
    expect(findCycle([a, b, c], { typeImports: false })).toBeNull();
    expect(findCycle([a, b, c], { typeImports: true })?.map(relativeTo(dir))).toEqual(['cli/a.ts', 'cli/b.ts', 'cli/c.ts', 'cli/a.ts']);
    const body = 'export const n = 1;\n'.repeat(MAX_LINES);
    const long = write('src/long.ts', `/** A long file. */\n${body}`);
    const excused = write('src/excused.ts', `/**\n * A long file.\n * Over 350 lines: one table that reads best whole.\n */\n${body}`);
    const empty = write('src/empty.ts', `// Over 350 lines:\n${body}`);
    const short = write('src/short.ts', 'export const n = 1;\n'.repeat(MAX_LINES));
    expect(oversized([long, excused, empty, short], relativeTo(dir))).toEqual(['src/long.ts: 351 lines', 'src/empty.ts: 351 lines']);
  });
});

describe('architecture', () => {
  const show = relativeTo(ROOT);

  it('machines/ reaches nothing that touches the disk, the network or the I/O parts of src/', () => {
    const machines = tsFiles(join(ROOT, 'machines'));
    expect(machines.length).toBeGreaterThan(0);
    expect(explain(impureReach(ROOT, machines))).toEqual([]);
  });

  it('src/events.ts imports nothing of ours, not even types', () => {
    const ours = importsOf(join(ROOT, 'src/events.ts')).filter((r) => r.specifier.startsWith('.'));
    expect(ours.map((r) => r.specifier)).toEqual([]);
  });

  it(`no file in src/ or machines/ is over ${MAX_LINES} lines without "${SIZE_REASON}" in its opening comment`, () => {
    const files = [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'machines'))];
    expect(oversized(files, show)).toEqual([]);
  });

  it('no files of src/ and machines/ import each other in a circle (type imports included)', () => {
    const cycle = findCycle([...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'machines'))], { typeImports: true });
    expect(cycle?.map(show) ?? null).toBeNull();
  });

  it('machines/ takes no value from the model clients (src/llm/, src/aiSdk/): what they need is pure and beside them', () => {
    const clientCode = (file: string): boolean => /^src\/(llm|aiSdk)\//.test(show(file));
    const reach = forbiddenReach(tsFiles(join(ROOT, 'machines')), { packages: new Set(), files: clientCode }, show);
    expect(explain(reach)).toEqual([]);
  });
});
