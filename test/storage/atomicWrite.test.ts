import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/storage/atomicWrite.js';
import { inlineDiskIO, type DiskIO, type SyncKind } from '../../src/storage/diskIO.js';

/** inlineDiskIO, each write's size and sync noted. */
function notingIO(): DiskIO & { writes: { bytes: number; sync?: SyncKind }[]; views: number } {
  const io = inlineDiskIO();
  const writes: { bytes: number; sync?: SyncKind }[] = [];
  let views = 0;
  return {
    writes,
    // Slices handed over as views of a larger buffer (a disk thread would be sent all of it).
    get views() {
      return views;
    },
    offLoop: io.offLoop,
    get syncs() {
      return io.syncs;
    },
    write: (fd, data, options) => {
      writes.push({ bytes: data.length, ...(options?.sync ? { sync: options.sync } : {}) });
      if (data.buffer.byteLength !== data.length) views++;
      return io.write(fd, data, options);
    },
    sync: (fd, kind) => io.sync(fd, kind),
    truncate: (fd, size) => io.truncate(fd, size),
  };
}

describe('writeFileAtomic', () => {
  const dirs: string[] = [];
  const dir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'wm-atomic-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('writes megabytes a slice at a time, synced once at the end, every surrogate pair whole', async () => {
    const path = join(dir(), 'archive.md');
    // A pair across every slice's edge (1 << 18 characters) and everywhere else.
    const text = `x${'😀'.repeat(700_000)}`;
    const io = notingIO();
    await writeFileAtomic(path, text, { io });
    expect(readFileSync(path, 'utf8')).toBe(text);
    expect(io.writes.length).toBeGreaterThan(5);
    expect(io.writes.filter((w) => w.sync)).toEqual([io.writes.at(-1)]);
    expect(io.writes.at(-1)!.sync).toBe('all');
    expect(io.writes.reduce((n, w) => n + w.bytes, 0)).toBe(Buffer.byteLength(text));
  });

  it('writes bytes a slice at a time too, and a small or empty file in one synced write', async () => {
    const d = dir();
    const bytes = Buffer.alloc(600_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 251;
    const io = notingIO();
    await writeFileAtomic(join(d, 'data.bin'), bytes, { io });
    expect(readFileSync(join(d, 'data.bin')).equals(bytes)).toBe(true);
    expect(io.writes.map((w) => w.bytes)).toEqual([1 << 18, 1 << 18, 600_000 - 2 * (1 << 18)]);
    expect(io.views).toBe(0);
    for (const content of ['short', '']) {
      const one = notingIO();
      await writeFileAtomic(join(d, 'small.md'), content, { io: one });
      expect(readFileSync(join(d, 'small.md'), 'utf8')).toBe(content);
      expect(one.writes).toEqual([{ bytes: Buffer.byteLength(content), sync: 'all' }]);
    }
    // Without durability: the same slices, none synced; no temporary file is left.
    const loose = notingIO();
    await writeFileAtomic(join(d, 'loose.bin'), bytes, { io: loose, durable: false });
    expect(loose.writes.every((w) => !w.sync)).toBe(true);
    expect(readdirSync(d).sort()).toEqual(['data.bin', 'loose.bin', 'small.md']);
  });
});
