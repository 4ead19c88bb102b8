/**
 * `npm run build` (and so `npm run demo` and `npm test`, which run it first) on a dist/ that
 * is up to date: tsc -b sees it is and writes nothing (issue 36: the demo spent ~90 s of its
 * ~97 s rebuilding a fresh dist/ every time). Said by what it writes, not by how long it takes.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Every file under dist/ and when it was last written. */
function written(): Map<string, number> {
  const dist = join(ROOT, 'dist');
  return new Map(
    readdirSync(dist, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => [join(e.parentPath, e.name), statSync(join(e.parentPath, e.name)).mtimeMs]),
  );
}

describe('npm run build on a fresh dist/', () => {
  it('writes nothing', () => {
    const build = (): void => {
      const run = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, encoding: 'utf8' });
      expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    };
    build(); // up to date now, whatever was edited before this test
    const before = written();
    build();
    const after = written();
    expect([...after].filter(([file, at]) => before.get(file) !== at).map(([file]) => file)).toEqual([]);
    expect(before.size).toBeGreaterThan(100);
  });
});
