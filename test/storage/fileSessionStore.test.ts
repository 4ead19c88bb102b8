/**
 * The filesystem store passes the storage port's contract, and keeps the layout and the
 * safety of docs/design.md §2: the same files, 0600/0700, temporary files in .tmp/.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { diskThreads } from '../../src/storage/diskIO.js';
import { fileSessionStore } from '../../src/storage/fileSessionStore.js';
import { sessionDir } from '../../src/storage/sessionPaths.js';
import { metaFor, sessionStoreContract } from './contract.js';

const threads = diskThreads({ threads: 2 });

sessionStoreContract(
  'filesystem',
  async () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-store-'));
    return { connect: async () => fileSessionStore({ home }), destroy: async () => rmSync(home, { recursive: true, force: true }) };
  },
  {
    noFencing:
      "its lock file is advisory: writes do not check it, so a holder paused past the heartbeat staleness and taken over could still append; fencing is the Postgres store's",
  },
);

// The same contract with every write and sync on the disk threads, as on a disk (the tests' temporary files are on a tmpfs).
sessionStoreContract(
  'filesystem, disk threads',
  async () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-store-'));
    return {
      connect: async () => fileSessionStore({ home, diskIO: threads }),
      destroy: async () => rmSync(home, { recursive: true, force: true }),
    };
  },
  {
    noFencing:
      "its lock file is advisory: writes do not check it, so a holder paused past the heartbeat staleness and taken over could still append; fencing is the Postgres store's",
  },
);

describe('filesystem store layout', () => {
  const homes: string[] = [];
  afterEach(() => {
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
  });
  const newHome = () => {
    const home = mkdtempSync(join(tmpdir(), 'workmem-store-'));
    homes.push(home);
    return home;
  };

  it('creates the directory of design §2 with private modes, and writes no temporary file outside .tmp/', async () => {
    const home = newHome();
    const store = fileSessionStore({ home });
    const id = randomUUID();
    const s = await store.create({ meta: metaFor(id, '/Users/a/proj') });
    const dir = sessionDir(home, '/Users/a/proj', id);
    expect(s.location).toBe(dir);
    expect(s.memory.location).toBe(join(dir, 'working-memory'));
    await s.log.append({ type: 'event', turn: 0, name: 'x', data: {} }, { expectedSeq: 1, sync: true });
    await s.memory.write('overview.md', '# Overview');
    expect(readdirSync(dir).sort()).toEqual(['.tmp', 'messages.jsonl', 'meta.json', 'session.lock', 'working-memory']);
    expect(readdirSync(join(dir, 'working-memory')).sort()).toEqual(['archive', 'detail', 'overview.md']);
    expect(readdirSync(join(dir, '.tmp'))).toEqual([]);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['messages.jsonl', 'meta.json', 'working-memory/overview.md'])
      expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'))).toEqual(metaFor(id, '/Users/a/proj'));
    expect(s.lease.token).toBe(JSON.parse(readFileSync(join(dir, 'session.lock'), 'utf8')).nonce);
    await s.close();
    expect(existsSync(join(dir, 'session.lock'))).toBe(false);
  });

  it('redacts log lines and meta; a corrupt meta.json is set aside and reported', async () => {
    const home = newHome();
    const store = fileSessionStore({ home });
    const redact = (t: string) => t.replaceAll('sk-secret', '[redacted]');
    const id = randomUUID();
    const s = await store.create({ meta: { ...metaFor(id), name: 'sk-secret' }, redact });
    await s.log.append({ type: 'event', turn: 0, name: 'x', data: { key: 'sk-secret' } }, { expectedSeq: 1, sync: true });
    await s.close();
    const dir = s.location;
    expect(readFileSync(join(dir, 'messages.jsonl'), 'utf8')).not.toContain('sk-secret');
    expect(readFileSync(join(dir, 'meta.json'), 'utf8')).not.toContain('sk-secret');
    writeFileSync(join(dir, 'meta.json'), '{ torn');
    const again = await store.open(id);
    const read = await again.readMeta();
    expect(read.ok).toBe(false);
    expect(!read.ok && read.problem).toMatch(/meta\.json unreadable .*kept as meta\.json\.corrupt-/);
    expect(readdirSync(dir).some((n) => n.startsWith('meta.json.corrupt-'))).toBe(true);
    await again.close();
  });

  it('a reader takes no lock and mends nothing: a corrupt meta.json is reported and left where it is; the trace is trace.jsonl', async () => {
    const home = newHome();
    const store = fileSessionStore({ home });
    const s = await store.create({ meta: metaFor(randomUUID()) });
    s.trace.write(['{"k":"header"}\n']);
    await s.close();
    expect(readFileSync(join(s.location, 'trace.jsonl'), 'utf8')).toBe('{"k":"header"}\n');
    writeFileSync(join(s.location, 'meta.json'), '{ not json');
    const reader = await store.read(s.id);
    const meta = await reader.readMeta();
    expect(meta.ok).toBe(false);
    expect(!meta.ok && meta.problem).toMatch(/meta\.json unreadable/);
    expect(readFileSync(join(s.location, 'meta.json'), 'utf8')).toBe('{ not json');
    expect(readdirSync(s.location).filter((name) => name.includes('corrupt'))).toEqual([]); // opening would set it aside
    expect(existsSync(join(s.location, 'session.lock'))).toBe(false);
    expect(await reader.readTrace()).toEqual(['{"k":"header"}']);
  });

  it('removes temporary files of interrupted writes when it opens, and says so', async () => {
    const home = newHome();
    const store = fileSessionStore({ home });
    const s = await store.create({ meta: metaFor(randomUUID()) });
    await s.close();
    writeFileSync(join(s.location, '.tmp', '.meta.json.1.dead.tmp'), 'half');
    const again = await store.open(s.id);
    expect(again.openNotes).toEqual([expect.stringMatching(/removed 1 temporary file/)]);
    expect(readdirSync(join(s.location, '.tmp'))).toEqual([]);
    await again.close();
  });

  it('writes the damage report to damage.json', async () => {
    const home = newHome();
    const s = await fileSessionStore({ home }).create({ meta: metaFor(randomUUID()) });
    await s.writeDamage({ checkedAt: 5, lines: [], repairs: [{ what: 'w', where: 'x', done: 'd' }] });
    expect(JSON.parse(readFileSync(join(s.location, 'damage.json'), 'utf8'))).toEqual({
      checkedAt: 5,
      lines: [],
      repairs: [{ what: 'w', where: 'x', done: 'd' }],
    });
    await s.close();
  });
});
