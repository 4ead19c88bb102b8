/**
 * A session's working memory over any store's memory files (the storage port):
 * overview.md (L1, injected into every request), detail/ (L2, read on demand, listed in
 * an index) and archive/ (never injected). The rules are memoryRules.ts's; the store
 * confines every path and makes every write atomic. A snapshot is cached against the
 * versions the store reports, so a request costs two stats, not a read.
 */
import type { MemoryFiles } from '../storage/sessionStore.js';
import { PathRefusedError } from '../errors/pathRefused.js';
import { memoryHealth, overviewTemplate, type MemoryLanguage } from './memoryTemplate.js';
import {
  checkWriteSize,
  HEADING_SCAN_BYTES,
  headingOf,
  MAX_FILE_BYTES,
  OVERVIEW,
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

export * from './memoryRules.js';

/** Called with a write's size and its path (as WriteResult names it) before it is made; throws to refuse it. */
export type Charge = (bytes: number, path: string) => void;

export class WorkingMemory {
  private overviewVersion: string | null = null;
  private detailVersion: string | null = null;
  private detailStale = true;
  private cached: MemorySnapshot | null = null;
  /** Headings already read, by path, valid while the file's version stays the same. */
  private readonly headings = new Map<string, { version: string; heading: string | null }>();

  constructor(
    readonly files: MemoryFiles,
    private readonly language: MemoryLanguage = 'en',
    /** Masks secrets in everything written (see redact.ts). */
    private readonly redact: (text: string) => string = (text) => text,
  ) {}

  /** Where the files are (working-memory/ for the filesystem store). */
  get root(): string {
    return this.files.location;
  }

  /** Write the overview template, unless there is an overview already. */
  async init(): Promise<void> {
    if (!(await this.files.exists(OVERVIEW))) await this.files.write(OVERVIEW, overviewTemplate(this.language));
  }

  /** The last snapshot taken (what the model was last shown), or null before the first. */
  get lastSnapshot(): MemorySnapshot | null {
    return this.cached;
  }

  async snapshot(): Promise<MemorySnapshot> {
    // One round trip for both versions where the store can (a database).
    let [overview, detail] = this.files.statAll
      ? await this.files.statAll([OVERVIEW, 'detail'])
      : [await this.files.stat(OVERVIEW), await this.files.stat('detail')];
    if (overview === null) {
      // Deleted from outside: start again from the template rather than from nothing.
      await this.init();
      overview = await this.files.stat(OVERVIEW);
    }
    // A planted link would send its target with every request.
    if (overview?.kind === 'link') throw overviewIsLink();
    if (!overview || overview.kind !== 'file') throw new PathRefusedError(`${OVERVIEW} is not a regular file`);
    const detailVersion = detail?.version ?? '-';
    const overviewChanged = this.overviewVersion !== overview.version;
    const detailChanged = this.detailStale || detailVersion !== this.detailVersion;
    if (this.cached && !overviewChanged && !detailChanged) return this.cached;

    const content = overviewChanged || !this.cached ? await this.readOverview(overview.bytes) : this.cached.content;
    const index = detailChanged || !this.cached ? await this.indexDetail() : this.cached.detail;
    this.overviewVersion = overview.version;
    this.detailVersion = detailVersion;
    this.detailStale = false;
    this.cached = {
      version: (this.cached?.version ?? 0) + 1,
      content,
      bytes: Buffer.byteLength(content),
      health: memoryHealth(content),
      detail: index,
    };
    return this.cached;
  }

  async read(
    path: unknown,
    options: { offset?: number; limit?: number } = {},
  ): Promise<{ text: string; totalLines: number; from: number; to: number }> {
    return sliceLines(await this.files.read(pathOf(path), { maxBytes: READ_MAX_BYTES }), options);
  }

  /** `charge` may refuse a write by its size and path (the write quotas) before anything is written. */
  async write(path: unknown, content: string, charge?: Charge): Promise<WriteResult> {
    const rel = await this.relOf(path);
    refuseReserved(rel);
    const bytes = Buffer.byteLength(content);
    checkWriteSize(rel, bytes);
    const existing = await this.files.stat(rel);
    if (existing && existing.kind !== 'file') throw new PathRefusedError(`${rel} exists and is not a regular file`);
    charge?.(bytes, `working-memory/${rel}`);
    const { created } = await this.files.write(rel, this.redact(content));
    return this.written(rel, bytes, created);
  }

  async edit(path: unknown, oldText: string, newText: string, charge?: Charge): Promise<WriteResult & { replacements: 1 }> {
    const rel = await this.relOf(path);
    refuseReserved(rel);
    if (oldText.length === 0) throw new PathRefusedError('old text is empty; use write to replace a whole file');
    const current = await this.files.read(rel, { maxBytes: MAX_FILE_BYTES });
    const { text, bytes } = replaceOnce(rel, current, oldText, newText);
    charge?.(bytes, `working-memory/${rel}`);
    await this.files.write(rel, this.redact(text));
    return { ...this.written(rel, bytes, false), replacements: 1 };
  }

  /**
   * A write by workmem itself (compaction archives, captured tool outputs): the same
   * confinement and atomicity, no size limit. (Compaction archives go with their log entry
   * through the storage's commit.)
   */
  async writeSystem(path: string, content: string): Promise<string> {
    const rel = await this.relOf(path);
    const text = this.redact(content);
    const { created } = await this.files.write(rel, text);
    this.written(rel, Buffer.byteLength(text), created);
    return `working-memory/${rel}`;
  }

  /** Whether a path inside working-memory/ exists. */
  exists(path: string): Promise<boolean> {
    return this.files.exists(path);
  }

  /**
   * The path relative to working-memory/, for the rules (reserved paths, the overview's
   * limit). The store confines it first (PathRefusedError before anything is written);
   * what is left to do is the store's own normalisation: `./` and the prefix dropped.
   */
  async relOf(path: unknown): Promise<string> {
    const input = pathOf(path);
    await this.files.exists(input);
    return input
      .replace(/^(\.\/)+/, '')
      .replace(/^working-memory\//, '')
      .split('/')
      .filter((s) => s !== '' && s !== '.')
      .join('/');
  }

  private async readOverview(bytes: number): Promise<string> {
    if (bytes > OVERVIEW_READ_MAX_BYTES) throw overviewTooLarge(bytes);
    return this.files.read(OVERVIEW, { maxBytes: OVERVIEW_READ_MAX_BYTES });
  }

  /** A file was written beside these methods (with a log entry, by the record): forget what was cached of it. */
  changed(rel: string): void {
    this.written(rel, 0, false);
  }

  private written(rel: string, bytes: number, created: boolean): WriteResult {
    if (rel.startsWith('detail/')) this.detailStale = true;
    if (rel === OVERVIEW) this.overviewVersion = null;
    return writeResult(rel, bytes, created);
  }

  private async indexDetail(): Promise<DetailEntry[]> {
    const entries: DetailEntry[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await this.files.list(folder)) {
        if (entry.kind === 'folder' && entry.path === TOOL_OUTPUTS_DIR) entries.push({ path: `${entry.path}/`, bytes: 0, heading: null });
        else if (entry.kind === 'folder') await walk(entry.path);
        // An aliased file may be one outside: list it, but read nothing from it. Links are never followed.
        else if (entry.kind === 'file')
          entries.push({
            path: entry.path,
            bytes: entry.bytes,
            heading: entry.aliased ? null : await this.headingOf(entry.path, entry.version),
          });
      }
    };
    await walk('detail');
    if (this.headings.size > entries.length * 2) {
      const present = new Set(entries.map((e) => e.path));
      for (const path of this.headings.keys()) if (!present.has(path)) this.headings.delete(path);
    }
    return entries;
  }

  /** Long sessions gather hundreds of archives: each file's heading is read once. */
  private async headingOf(path: string, version: string): Promise<string | null> {
    const known = this.headings.get(path);
    if (known && known.version === version) return known.heading;
    const heading = await this.files.read(path, { maxBytes: HEADING_SCAN_BYTES, head: true }).then(headingOf, () => null);
    this.headings.set(path, { version, heading });
    return heading;
  }
}

/** The model's path as given, when it is a string at all. */
function pathOf(path: unknown): string {
  if (typeof path !== 'string') throw new PathRefusedError(`path must be a string, got ${typeof path}`);
  return path;
}
