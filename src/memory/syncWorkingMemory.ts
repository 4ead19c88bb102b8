/**
 * A session's working-memory/ directory, synchronously on the filesystem: the working
 * memory SessionFiles still hands to the session, actors and compaction. WorkingMemory
 * (workingMemory.ts) is the same over the storage port; this one goes when those callers
 * move to SessionRecord. Both keep the rules of memoryRules.ts.
 * Reads are cached against the file's stat so a request costs a stat, not a read.
 * Every path the model gives is confined by sandboxPath.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { DIR_MODE, writeFileAtomic } from '../storage/atomicWrite.js';
import { mkdirInside } from '../storage/fileMemoryFiles.js';
import { memoryHealth, overviewTemplate, type MemoryLanguage } from './memoryTemplate.js';
import {
  checkOverviewSize,
  checkWriteSize,
  HEADING_SCAN_BYTES,
  headingOf,
  MAX_FILE_BYTES,
  OVERVIEW,
  OVERVIEW_PATH,
  OVERVIEW_READ_MAX_BYTES,
  overviewIsLink,
  overviewTooLarge,
  READ_MAX_BYTES,
  refuseReserved,
  replaceOnce,
  sliceLines,
  TOOL_OUTPUTS_DIR,
  writeResult,
  type DetailEntry,
  type MemorySnapshot,
  type WriteResult,
} from './memoryRules.js';
import {
  lstatOrNull,
  openInside,
  PathRefusedError,
  readOpened,
  requireRegularFile,
  resolveInside,
  writeInside,
  type ResolvedPath,
} from '../storage/sandboxPath.js';

export class SyncWorkingMemory {
  readonly root: string;
  private overviewStat: { mtimeMs: number; size: number; ino: number } | null = null;
  private detailMtime = -1;
  private detailStale = true;
  private cached: MemorySnapshot | null = null;
  /** Headings already read, by path, valid while the file's size and mtime stay the same. */
  private readonly headings = new Map<string, { mtimeMs: number; size: number; heading: string | null }>();

  constructor(
    root: string,
    private readonly language: MemoryLanguage = 'en',
    /** Masks secrets in everything written (see redact.ts). */
    private readonly redact: (text: string) => string = (text) => text,
    /** Where atomic writes put their temporary files (a session's .tmp/); default beside each file. */
    private readonly tmpDir?: string,
  ) {
    this.root = root;
  }

  private get atomic(): { tmpDir?: string } {
    return this.tmpDir ? { tmpDir: this.tmpDir } : {};
  }

  /** Create the directory layout and the template, keeping whatever already exists. */
  init(): void {
    for (const dir of [this.root, join(this.root, 'detail'), join(this.root, 'archive')]) {
      mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    }
    if (!exists(join(this.root, OVERVIEW))) writeFileAtomic(join(this.root, OVERVIEW), overviewTemplate(this.language), this.atomic);
  }

  snapshot(): MemorySnapshot {
    const overviewFile = join(this.root, OVERVIEW);
    // lstat, then a no-follow open: a planted symlink would send its target with every request.
    let stat = lstatOrNull(overviewFile);
    if (stat === null) {
      // Deleted from outside: start again from the template rather than from nothing.
      this.init();
      stat = lstatSync(overviewFile);
    }
    if (stat.isSymbolicLink()) throw overviewIsLink();
    const detailMtime = mtimeOrMinus1(join(this.root, 'detail'));
    const overviewChanged =
      !this.overviewStat ||
      this.overviewStat.mtimeMs !== stat.mtimeMs ||
      this.overviewStat.size !== stat.size ||
      this.overviewStat.ino !== stat.ino;
    const detailChanged = this.detailStale || detailMtime !== this.detailMtime;
    if (this.cached && !overviewChanged && !detailChanged) return this.cached;

    const content = overviewChanged || !this.cached ? this.readOverview(overviewFile) : this.cached.content;
    const detail = detailChanged || !this.cached ? this.indexDetail() : this.cached.detail;
    this.overviewStat = { mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino };
    this.detailMtime = detailMtime;
    this.detailStale = false;
    this.cached = {
      version: (this.cached?.version ?? 0) + 1,
      content,
      bytes: Buffer.byteLength(content),
      health: memoryHealth(content),
      detail,
    };
    return this.cached;
  }

  read(path: unknown, options: { offset?: number; limit?: number } = {}): { text: string; totalLines: number; from: number; to: number } {
    const resolved = resolveInside(this.root, path, 'working-memory/');
    requireRegularFile(resolved, String(path));
    return sliceLines(this.readInside(resolved, String(path), READ_MAX_BYTES), options);
  }

  /** `charge` may refuse a write by its size (the per-turn quota) before anything is written. */
  write(path: unknown, content: string, charge?: (bytes: number) => void): WriteResult {
    const resolved = resolveInside(this.root, path, 'working-memory/');
    refuseReserved(resolved.rel);
    const bytes = Buffer.byteLength(content);
    checkWriteSize(resolved.rel, bytes);
    if (resolved.stat && !resolved.stat.isFile()) throw new PathRefusedError(`${resolved.rel} exists and is not a regular file`);
    charge?.(bytes);
    mkdirInside(this.root, dirname(resolved.rel));
    writeInside(this.root, resolved, String(path), this.redact(content), this.atomic);
    return this.written(resolved.rel, bytes, resolved.stat === null);
  }

  edit(path: unknown, oldText: string, newText: string, charge?: (bytes: number) => void): WriteResult & { replacements: 1 } {
    const resolved = resolveInside(this.root, path, 'working-memory/');
    refuseReserved(resolved.rel);
    requireRegularFile(resolved, String(path));
    if (oldText.length === 0) throw new PathRefusedError('old text is empty; use write to replace a whole file');
    const current = this.readInside(resolved, String(path), MAX_FILE_BYTES);
    const { text: next, bytes } = replaceOnce(resolved.rel, current, oldText, newText);
    charge?.(bytes);
    writeInside(this.root, resolved, String(path), this.redact(next), this.atomic);
    return { ...this.written(resolved.rel, bytes, false), replacements: 1 };
  }

  /**
   * A write by workmem itself (compaction archives, captured tool outputs): the same
   * confinement and atomicity, no size limit. `append` adds a section to an existing file.
   */
  writeSystem(path: string, content: string, options: { append?: boolean } = {}): string {
    const resolved = resolveInside(this.root, path, 'working-memory/');
    if (resolved.stat && !resolved.stat.isFile()) throw new PathRefusedError(`${resolved.rel} exists and is not a regular file`);
    mkdirInside(this.root, dirname(resolved.rel));
    let text = content;
    if (options.append && resolved.stat) {
      requireRegularFile(resolved, path);
      text = `${this.readInside(resolved, path, Number.MAX_SAFE_INTEGER).trimEnd()}\n\n---\n\n${content}`;
    }
    text = this.redact(text);
    writeInside(this.root, resolved, path, text, this.atomic);
    this.written(resolved.rel, Buffer.byteLength(text), resolved.stat === null);
    return `working-memory/${resolved.rel}`;
  }

  /** Whether a path inside working-memory/ exists. */
  exists(path: string): boolean {
    return resolveInside(this.root, path, 'working-memory/').stat !== null;
  }

  /** A file's text, read by a descriptor verified to be inside (see openInside), size checked first. */
  private readInside(resolved: ResolvedPath, input: string, maxBytes: number): string {
    const { fd, stat } = openInside(this.root, resolved, input);
    try {
      if (stat.size > maxBytes) throw new PathRefusedError(`${resolved.rel} is ${stat.size} bytes; too large to read`);
      return readOpened(fd, stat.size);
    } finally {
      closeSync(fd);
    }
  }

  private readOverview(file: string): string {
    const { fd, stat } = openInside(this.root, { abs: file, rel: OVERVIEW, stat: null }, OVERVIEW_PATH);
    try {
      if (stat.size > OVERVIEW_READ_MAX_BYTES) throw overviewTooLarge(stat.size);
      return readOpened(fd, stat.size);
    } finally {
      closeSync(fd);
    }
  }

  private written(rel: string, bytes: number, created: boolean): WriteResult {
    if (rel.startsWith('detail/')) this.detailStale = true;
    if (rel === OVERVIEW) this.overviewStat = null;
    return writeResult(rel, bytes, created);
  }

  private indexDetail(): DetailEntry[] {
    const entries: DetailEntry[] = [];
    const walk = (relDir: string): void => {
      let names: string[];
      try {
        if (!lstatSync(join(this.root, relDir)).isDirectory()) return;
        names = readdirSync(join(this.root, relDir)).sort();
      } catch {
        return;
      }
      for (const name of names) {
        if (name.startsWith('.')) continue; // tmp files of atomic writes
        const rel = `${relDir}/${name}`;
        let stat: Stats;
        try {
          // lstat: a symlink is never followed (it could point anywhere, or back at itself).
          stat = lstatSync(join(this.root, rel));
        } catch {
          continue;
        }
        if (stat.isDirectory() && rel === TOOL_OUTPUTS_DIR) entries.push({ path: `${rel}/`, bytes: 0, heading: null });
        else if (stat.isDirectory()) walk(rel);
        // A hard-linked file may alias one outside: list it, but read nothing from it.
        else if (stat.isFile()) entries.push({ path: rel, bytes: stat.size, heading: stat.nlink > 1 ? null : this.headingOf(rel, stat) });
      }
    };
    walk('detail');
    if (this.headings.size > entries.length * 2) {
      const present = new Set(entries.map((e) => e.path));
      for (const path of this.headings.keys()) if (!present.has(path)) this.headings.delete(path);
    }
    return entries;
  }

  /** Long sessions gather hundreds of archives: each file's heading is read once. */
  private headingOf(rel: string, stat: Stats): string | null {
    const known = this.headings.get(rel);
    if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known.heading;
    const heading = firstHeading(join(this.root, rel));
    this.headings.set(rel, { mtimeMs: stat.mtimeMs, size: stat.size, heading });
    return heading;
  }
}

function firstHeading(file: string): string | null {
  const buffer = Buffer.alloc(HEADING_SCAN_BYTES);
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    if (!fstatSync(fd).isFile()) return null;
    const n = readSync(fd, buffer, 0, HEADING_SCAN_BYTES, 0);
    return headingOf(buffer.subarray(0, n).toString('utf8'));
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function mtimeOrMinus1(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}
