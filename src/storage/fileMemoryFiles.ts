/**
 * A session's working-memory/ on disk, as the port's MemoryFiles: every path confined by
 * sandboxPath (no `..`, no links, no hard-linked aliases), reads through a descriptor
 * verified to be inside, writes atomic with their folder pinned and their temporary file
 * in the session's .tmp/. Reads and lookups are synchronous underneath (small files in
 * the page cache); writes and their syncs go through DiskIO (atomicWrite.ts).
 */
import { closeSync, lstatSync, mkdirSync, readdirSync, readSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { DIR_MODE } from './atomicWrite.js';
import type { DiskIO } from './diskIO.js';
import {
  openInside,
  PathRefusedError,
  readOpened,
  requireRegularFile,
  resolveInside,
  writeInside,
  type ResolvedPath,
} from './sandboxPath.js';
import type { MemoryEntry, MemoryFiles } from './sessionStore.js';

const PREFIX = 'working-memory/';

export class FileMemoryFiles implements MemoryFiles {
  constructor(
    /** The working-memory/ directory. */
    readonly location: string,
    /** Where atomic writes put their temporary files (the session's .tmp/). */
    private readonly tmpDir: string,
    /** How writes reach the disk (diskIO.ts). */
    private readonly io: DiskIO,
  ) {}

  /** Make working-memory/, detail/ and archive/, keeping whatever is there. */
  layout(): void {
    for (const dir of [this.location, join(this.location, 'detail'), join(this.location, 'archive')]) {
      mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    }
  }

  async read(path: string, options: { maxBytes: number; head?: boolean }): Promise<string> {
    const resolved = resolveInside(this.location, path, PREFIX);
    requireRegularFile(resolved, path);
    return this.readResolved(resolved, path, options);
  }

  async write(path: string, content: string): Promise<{ created: boolean }> {
    const resolved = this.writable(path);
    await writeInside(this.location, resolved, path, content, { tmpDir: this.tmpDir, io: this.io });
    return { created: resolved.stat === null };
  }

  async append(path: string, section: string): Promise<{ created: boolean; bytes: number }> {
    const resolved = this.writable(path);
    let text = section;
    if (resolved.stat) {
      requireRegularFile(resolved, path);
      text = `${this.readResolved(resolved, path, { maxBytes: Number.MAX_SAFE_INTEGER }).trimEnd()}\n\n---\n\n${section}`;
    }
    await writeInside(this.location, resolved, path, text, { tmpDir: this.tmpDir, io: this.io });
    return { created: resolved.stat === null, bytes: Buffer.byteLength(text) };
  }

  async list(folder: string): Promise<MemoryEntry[]> {
    const base = folder === '.' || folder === '' || folder === PREFIX.slice(0, -1) ? '' : resolveInside(this.location, folder, PREFIX).rel;
    let names: string[];
    try {
      if (!lstatSync(join(this.location, base)).isDirectory()) return [];
      names = readdirSync(join(this.location, base)).sort();
    } catch {
      return [];
    }
    const entries: MemoryEntry[] = [];
    for (const name of names) {
      if (name.startsWith('.')) continue; // temporary files of atomic writes made beside the file
      const rel = base ? `${base}/${name}` : name;
      try {
        // lstat: a link is reported, never followed (it could point anywhere, or back at itself).
        entries.push(entryOf(rel, lstatSync(join(this.location, rel))));
      } catch {
        /* removed meanwhile */
      }
    }
    return entries;
  }

  async exists(path: string): Promise<boolean> {
    return resolveInside(this.location, path, PREFIX).stat !== null;
  }

  async stat(path: string): Promise<MemoryEntry | null> {
    const resolved = resolveInside(this.location, path, PREFIX, { reportFinalLink: true });
    return resolved.stat ? entryOf(resolved.rel, resolved.stat) : null;
  }

  /** Resolve a path to write: an existing entry must be a plain file; its folders are made, one level at a time. */
  private writable(path: string): ResolvedPath {
    const resolved = resolveInside(this.location, path, PREFIX);
    if (resolved.stat && !resolved.stat.isFile()) throw new PathRefusedError(`${resolved.rel} exists and is not a regular file`);
    mkdirInside(this.location, dirname(resolved.rel));
    return resolved;
  }

  /** A file's text, read by a descriptor verified to be inside (see openInside), size checked first. */
  private readResolved(resolved: ResolvedPath, input: string, options: { maxBytes: number; head?: boolean }): string {
    const { fd, stat } = openInside(this.location, resolved, input);
    try {
      if (options.head) {
        const buffer = Buffer.alloc(Math.min(stat.size, options.maxBytes));
        const n = readSync(fd, buffer, 0, buffer.length, 0);
        return buffer.toString('utf8', 0, n);
      }
      if (stat.size > options.maxBytes) throw new PathRefusedError(`${resolved.rel} is ${stat.size} bytes; too large to read`);
      return readOpened(fd, stat.size);
    } finally {
      closeSync(fd);
    }
  }
}

function entryOf(path: string, stat: Stats): MemoryEntry {
  const kind = stat.isSymbolicLink() ? 'link' : stat.isDirectory() ? 'folder' : stat.isFile() ? 'file' : 'other';
  return {
    path,
    kind,
    bytes: kind === 'file' ? stat.size : 0,
    version: `${stat.ino}:${stat.mtimeMs}:${stat.size}`,
    aliased: kind === 'file' && stat.nlink > 1,
  };
}

/** Create directories under root one level at a time, so no symlink can redirect them. */
export function mkdirInside(root: string, relDir: string): void {
  if (relDir === '.' || relDir === '') return;
  let current = root;
  for (const part of relDir.split('/')) {
    current = join(current, part);
    try {
      mkdirSync(current, { mode: DIR_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
