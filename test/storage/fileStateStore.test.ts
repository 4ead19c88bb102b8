import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileStateStore } from '../../src/storage/fileStateStore.js';
import { tempHome } from '../helpers.js';

const KEYS = [
  'session:0f3c2a4e-1111-4222-8333-944445555666',
  'tracker:0f3c2a4e-1111-4222-8333-944445555666',
  'items:user:ada:1',
  'items:user:Ada:1', // differs only in case: must not share a file on a case-insensitive disk
  'a/b/../../c',
  '..',
  '.hidden',
  '100% sure',
  '记忆:用户:爱达',
  'con',
  'star*:?<>|"\\',
  `long:${'x'.repeat(400)}`,
  `long:${'x'.repeat(400)}y`,
];

function modes(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const full = join(entry.parentPath, entry.name);
    out.push(`${entry.isDirectory() ? 'd' : 'f'} ${(statSync(full).mode & 0o777).toString(8)}`);
  }
  return out;
}

describe('the file state store', () => {
  it('gets, sets, deletes and lists by prefix, whatever the key', async () => {
    const dir = join(tempHome(), 'state');
    const store = fileStateStore(dir);
    expect(await store.get('missing')).toBeUndefined();
    expect(await store.entries('')).toEqual([]); // nothing made on disk by reading
    for (const [i, key] of KEYS.entries()) await store.set(key, { n: i, key });
    for (const [i, key] of KEYS.entries()) expect(await store.get(key), key).toEqual({ n: i, key });
    expect((await store.entries('')).map(([k]) => k).sort()).toEqual([...KEYS].sort());
    expect((await store.entries('items:user:')).map(([k]) => k).sort()).toEqual(['items:user:Ada:1', 'items:user:ada:1']);
    expect((await store.entries('items:user:a')).map(([k]) => k)).toEqual(['items:user:ada:1']);
    expect((await store.entries('long:')).length).toBe(2);
    expect((await store.entries(`long:${'x'.repeat(400)}y`)).map(([, v]) => v)).toEqual([{ n: KEYS.length - 1, key: KEYS.at(-1) }]);
    expect(await store.entries('记忆:')).toEqual([['记忆:用户:爱达', { n: 8, key: '记忆:用户:爱达' }]]);
    // Every file stays inside the folder, with a name that is safe everywhere.
    for (const name of readdirSync(dir)) {
      if (name === '.tmp') continue;
      expect(name).toMatch(/^([a-z0-9_-]|%[0-9A-F]{2})([a-z0-9_.-]|%[0-9A-F]{2})*(~[0-9a-f]{16})?\.json$/);
      expect(Buffer.byteLength(name)).toBeLessThan(250);
      expect(name.toLowerCase().split('.')[0]).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)$/);
    }
    const lower = readdirSync(dir).map((n) => n.toLowerCase());
    expect(new Set(lower).size).toBe(lower.length);
    await store.set('items:user:ada:1', 'replaced');
    expect(await store.get('items:user:ada:1')).toBe('replaced');
    await store.delete('items:user:ada:1');
    await store.delete('items:user:ada:1'); // twice: no error
    expect(await store.get('items:user:ada:1')).toBeUndefined();
    expect((await store.entries('items:')).map(([k]) => k)).toEqual(['items:user:Ada:1']);
    await store.close();
  });

  it('files are 0600 and folders 0700; temp files are never entries', async () => {
    const home = tempHome();
    const dir = join(home, 'state');
    const store = fileStateStore(dir);
    await store.set('items:a', 1);
    await store.set('session:b', 2);
    // A temp file left by a killed writer.
    writeFileSync(join(dir, '.tmp', '.items%3Ac.json.123.abcd.tmp'), '{"key":"items:c","value":3}', { mode: 0o600 });
    expect((await store.entries('')).map(([k]) => k).sort()).toEqual(['items:a', 'session:b']);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(modes(dir).filter((m) => m !== 'd 700' && m !== 'f 600')).toEqual([]);
    expect(modes(dir)).toContain('d 700'); // .tmp/ exists and is private
    await store.close();
  });

  it('temp files a killed writer left behind are swept once they are old; a fresh one (another process writing) stays', async () => {
    const dir = join(tempHome(), 'state');
    mkdirSync(join(dir, '.tmp'), { recursive: true, mode: 0o700 });
    const old = join(dir, '.tmp', '.items%3Aa.json.1.dead.tmp');
    const fresh = join(dir, '.tmp', '.items%3Ab.json.2.beef.tmp');
    writeFileSync(old, '{', { mode: 0o600 });
    writeFileSync(fresh, '{', { mode: 0o600 });
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(old, hourAgo, hourAgo);
    const store = fileStateStore(dir);
    await store.set('items:c', 1);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
  });

  it('a damaged file is skipped and reported, never a crash', async () => {
    const dir = join(tempHome(), 'state');
    const reports: string[] = [];
    const store = fileStateStore(dir, { report: (m) => reports.push(m) });
    await store.set('items:s:1', { ok: 1 });
    await store.set('items:s:2', { ok: 2 });
    await store.set('items:s:3', { ok: 3 });
    const names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
    writeFileSync(join(dir, names[1]!), '{"key":"items:s:2","val'); // torn
    writeFileSync(join(dir, names[2]!), '[1,2,3]'); // valid JSON, not ours
    mkdirSync(join(dir, 'items%3As%3A9.json')); // a folder where a file should be
    expect(await store.entries('items:s:')).toEqual([['items:s:1', { ok: 1 }]]);
    expect(reports).toHaveLength(3);
    expect(reports.join('\n')).toMatch(/items%3As%3A2\.json.*skipped/);
    expect(await store.get('items:s:2')).toBeUndefined();
    expect(reports).toHaveLength(4);
    // Nothing is lost by a read: the damaged file is left for a look, and a write replaces it.
    expect(readFileSync(join(dir, names[1]!), 'utf8')).toBe('{"key":"items:s:2","val');
    await store.set('items:s:2', { ok: 'again' });
    expect(await store.get('items:s:2')).toEqual({ ok: 'again' });
    await store.close();
  });

  it('two stores on the same folder (two processes) see each other’s keys', async () => {
    const dir = join(tempHome(), 'state');
    const a = fileStateStore(dir);
    const b = fileStateStore(dir);
    await Promise.all([a.set('session:1', 'one'), b.set('session:2', 'two')]);
    expect((await a.entries('session:')).sort()).toEqual([
      ['session:1', 'one'],
      ['session:2', 'two'],
    ]);
    await b.delete('session:1');
    expect(await a.get('session:1')).toBeUndefined();
  });
});
