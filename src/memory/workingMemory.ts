/**
 * A session's working-memory/ directory: overview.md (L1, injected into every request),
 * detail/ (L2, read on demand, listed in an index) and archive/ (never injected).
 * Reads are cached against the file's stat so a request costs a stat, not a read.
 * Every path the model gives is confined by sandboxPath.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { DIR_MODE, writeFileAtomic } from '../storage/atomicWrite.js';
import { memoryHealth, overviewTemplate, type MemoryHealth, type MemoryLanguage } from './memoryTemplate.js';
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

export const OVERVIEW = 'overview.md';
export const OVERVIEW_PATH = 'working-memory/overview.md';
export const OVERVIEW_SOFT_LIMIT = 5 * 1024;
/** Any one working-memory file; larger writes are refused (a memory, not a dump). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** overview.md goes into every request: beyond this it would crowd out the conversation. */
export const OVERVIEW_MAX_BYTES = 32 * 1024;
/** An overview.md placed by hand may be larger than a write allows, but not beyond this. */
export const OVERVIEW_READ_MAX_BYTES = MAX_FILE_BYTES;
const HEADING_SCAN_BYTES = 4096;

export interface DetailEntry {
  /** Relative to working-memory/, e.g. `detail/design.md`; a directory ends with `/`. */
  path: string;
  bytes: number;
  heading: string | null;
}

/** Full outputs of capped tool results: one stable line in the index, never walked. */
export const TOOL_OUTPUTS_DIR = 'detail/tool-outputs';

/** Why the model may not write `rel` (a path workmem owns), or null. */
export function reservedPath(rel: string): string | null {
  const lower = rel.toLowerCase();
  if (lower === TOOL_OUTPUTS_DIR || lower.startsWith(`${TOOL_OUTPUTS_DIR}/`))
    return `${rel} is reserved: ${TOOL_OUTPUTS_DIR}/ is workmem's own folder for saved tool outputs (read them, but write elsewhere in detail/)`;
  return null;
}

export interface MemorySnapshot {
  /** Changes whenever the content or the detail index changes. */
  version: number;
  content: string;
  bytes: number;
  health: MemoryHealth;
  detail: readonly DetailEntry[];
  /** Item memories relevant to the latest user message, when that injection is on. */
  relevant?: string;
}

export interface WriteResult {
  path: string;
  bytes: number;
  created: boolean;
  isOverview: boolean;
  warning?: string;
}

export class WorkingMemory {
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
    if (stat.isSymbolicLink()) {
      throw new PathRefusedError(
        `${OVERVIEW_PATH} is a symlink; refused (its target would be sent to the model with every request): replace it with a regular file`,
      );
    }
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
    const lines = this.readInside(resolved, String(path), 50 * MAX_FILE_BYTES).split('\n');
    const from = Math.max(0, options.offset ?? 0);
    const to = Math.min(lines.length, from + (options.limit ?? lines.length));
    return { text: lines.slice(from, to).join('\n'), totalLines: lines.length, from, to };
  }

  /** `charge` may refuse a write by its size (the per-turn quota) before anything is written. */
  write(path: unknown, content: string, charge?: (bytes: number) => void): WriteResult {
    const resolved = resolveInside(this.root, path, 'working-memory/');
    refuseReserved(resolved.rel);
    const bytes = Buffer.byteLength(content);
    if (bytes > MAX_FILE_BYTES) {
      throw new PathRefusedError(`content is ${bytes} bytes; a working-memory file may hold at most ${MAX_FILE_BYTES}`);
    }
    checkOverviewSize(resolved.rel, bytes);
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
    const first = current.indexOf(oldText);
    if (first < 0) throw new PathRefusedError(`old text not found in ${resolved.rel}`);
    if (current.indexOf(oldText, first + 1) >= 0) {
      throw new PathRefusedError(`old text occurs more than once in ${resolved.rel}; include more context to make it unique`);
    }
    const next = current.slice(0, first) + newText + current.slice(first + oldText.length);
    const bytes = Buffer.byteLength(next);
    if (bytes > MAX_FILE_BYTES) throw new PathRefusedError(`result would be ${bytes} bytes; the limit is ${MAX_FILE_BYTES}`);
    checkOverviewSize(resolved.rel, bytes);
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
      if (stat.size > OVERVIEW_READ_MAX_BYTES) {
        throw new PathRefusedError(
          `${OVERVIEW_PATH} is ${mb(stat.size)}; it is sent with every request, so it may hold at most ${mb(OVERVIEW_READ_MAX_BYTES)}: shorten it, or move its content to working-memory/detail/ files`,
        );
      }
      return readOpened(fd, stat.size);
    } finally {
      closeSync(fd);
    }
  }

  private written(rel: string, bytes: number, created: boolean): WriteResult {
    if (rel.startsWith('detail/')) this.detailStale = true;
    const isOverview = rel === OVERVIEW;
    if (isOverview) this.overviewStat = null;
    const result: WriteResult = { path: `working-memory/${rel}`, bytes, created, isOverview };
    if (isOverview && bytes > OVERVIEW_SOFT_LIMIT) {
      result.warning = `overview.md is ${(bytes / 1024).toFixed(1)} KB, over the 5 KB guideline: move details to working-memory/detail/ and keep the overview short.`;
    }
    return result;
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
    const match = /^#{1,6}\s+(.+)$/m.exec(buffer.subarray(0, n).toString('utf8'));
    return match ? match[1]!.trim().slice(0, 120) : null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Create directories under root one level at a time, so no symlink can redirect them. */
function mkdirInside(root: string, relDir: string): void {
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


function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
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

function refuseReserved(rel: string): void {
  const reserved = reservedPath(rel);
  if (reserved) throw new PathRefusedError(reserved);
}

function checkOverviewSize(rel: string, bytes: number): void {
  if (rel !== OVERVIEW || bytes <= OVERVIEW_MAX_BYTES) return;
  throw new PathRefusedError(
    `overview.md would be ${(bytes / 1024).toFixed(1)} KB; it is sent with every request, so it may hold at most ${OVERVIEW_MAX_BYTES / 1024} KB (aim for 5 KB): move details to working-memory/detail/ files`,
  );
}
