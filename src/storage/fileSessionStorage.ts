/**
 * One session's directory, open under its lock, as the port's SessionStorage:
 * messages.jsonl through LogAppender, meta.json and damage.json written atomically (their
 * temporary files in .tmp/), working-memory/ through FileMemoryFiles, and session.lock
 * (SessionLock, with its heartbeat) as the lease, trace.jsonl beside them (FileTraceWriter);
 * every write and sync through the store's DiskIO (off the event loop on a disk).
 */
import { readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TEMP_DIR, writeFileAtomic } from './atomicWrite.js';
import { FileMemoryFiles } from './fileMemoryFiles.js';
import { FileTraceWriter } from './fileTraceWriter.js';
import { LogAppender } from './logAppender.js';
import { readLogFile, type LoadedLog, type NewEntry } from './messageLog.js';
import type { DiskIO } from './diskIO.js';
import { firstLine, SessionMetaSchema, type SessionMeta } from './sessionMeta.js';
import { SESSION_FILES } from './sessionPaths.js';
import type { SessionLock } from './sessionLock.js';
import type { DamageReport, Lease, LogRead, MemoryWrite, MetaRead, Redact, SessionLog, SessionStorage } from './sessionStore.js';
import { LeaseLostError, SequenceConflictError } from './storeErrors.js';

const noRedaction: Redact = (text) => text;

export class FileSessionStorage implements SessionStorage {
  readonly log: FileSessionLog;
  readonly memory: FileMemoryFiles;
  readonly trace: FileTraceWriter;
  readonly lease: Lease;
  readonly openNotes: readonly string[];
  private closed = false;

  /**
   * Open the directory `location` of session `id`, whose lock the caller has just taken and
   * hands over: its log read (off the event loop) and opened for appending.
   */
  static async open(
    id: string,
    location: string,
    lock: SessionLock,
    options: { redact?: Redact; now?: () => number; fresh?: boolean; io: DiskIO },
  ): Promise<FileSessionStorage> {
    const loaded = options.fresh ? { entries: [], damage: [], tornTail: false } : await readLogFile(join(location, SESSION_FILES.messages));
    return new FileSessionStorage(id, location, lock, loaded, options);
  }

  private constructor(
    readonly id: string,
    readonly location: string,
    private readonly lock: SessionLock,
    loaded: LoadedLog,
    options: { redact?: Redact; now?: () => number; fresh?: boolean; io: DiskIO },
  ) {
    this.redact = options.redact ?? noRedaction;
    this.now = options.now ?? Date.now;
    this.io = options.io;
    this.memory = new FileMemoryFiles(join(location, SESSION_FILES.workingMemory), this.tmpDir, this.io);
    // We hold the lock: temporary files are left from writes a crash interrupted.
    const leftovers = options.fresh ? 0 : removeTempFiles(location);
    this.openNotes = leftovers
      ? [`removed ${leftovers} temporary file(s) of writes interrupted by a crash (the files they were replacing are intact)`]
      : [];
    this.memory.layout();
    this.trace = new FileTraceWriter(join(location, SESSION_FILES.trace), this.io);
    this.log = new FileSessionLog(
      id,
      new LogAppender(join(location, SESSION_FILES.messages), lastSeqOf(loaded), loaded.tornTail, this.io, this.now, this.redact),
      loaded,
    );
    this.lease = {
      token: lock.nonce,
      holder: `pid ${process.pid}`,
      renew: async () => {
        if (!lock.renew()) throw new LeaseLostError(`session ${id}: its lock ${lock.path} is no longer held by this process`);
      },
      release: async () => lock.release(),
    };
  }

  private readonly io: DiskIO;
  private readonly redact: Redact;
  private readonly now: () => number;

  private get tmpDir(): string {
    return join(this.location, TEMP_DIR);
  }

  async readMeta(): Promise<MetaRead> {
    const path = join(this.location, SESSION_FILES.meta);
    try {
      return { ok: true, meta: SessionMetaSchema.parse(JSON.parse(readFileSync(path, 'utf8'))) };
    } catch (error) {
      let problem = `meta.json unreadable (${firstLine(error)}); rebuilt from messages.jsonl`;
      const aside = `${path}.corrupt-${this.now()}`;
      try {
        renameSync(path, aside);
        problem += `, the old file kept as ${aside.slice(this.location.length + 1)}`;
      } catch {
        /* missing altogether */
      }
      return { ok: false, problem };
    }
  }

  async writeMeta(meta: SessionMeta, options: { durable?: boolean } = {}): Promise<void> {
    await writeMetaFile(this.location, meta, this.redact, options.durable !== false, this.io);
  }

  /** Files first (each atomic and durable), then the entry, synced: see SessionStorage.commit. */
  async commit<E extends NewEntry>(
    files: readonly MemoryWrite[],
    entry: E,
    options: { expectedSeq: number },
  ): Promise<E & { seq: number; ts: number }> {
    if (options.expectedSeq !== this.log.nextSeq) throw new SequenceConflictError(this.id, options.expectedSeq, this.log.nextSeq);
    for (const file of files) {
      if (file.append) await this.memory.append(file.path, file.content);
      else await this.memory.write(file.path, file.content);
    }
    return this.log.append(entry, { expectedSeq: options.expectedSeq, sync: true });
  }

  async writeDamage(report: DamageReport): Promise<void> {
    const body = { checkedAt: report.checkedAt, lines: report.lines, ...(report.repairs.length ? { repairs: report.repairs } : {}) };
    await writeFileAtomic(join(this.location, SESSION_FILES.damage), `${JSON.stringify(body, null, 2)}\n`, {
      tmpDir: this.tmpDir,
      io: this.io,
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.trace.close();
      await this.log.close();
    } finally {
      this.lock.release();
    }
  }
}

/** meta.json, replaced atomically; `durable: false` skips the fsyncs (it is rebuilt from the log). */
export function writeMetaFile(dir: string, meta: SessionMeta, redact: Redact, durable: boolean, io: DiskIO): Promise<void> {
  return writeFileAtomic(join(dir, SESSION_FILES.meta), redact(`${JSON.stringify(meta, null, 2)}\n`), {
    durable,
    tmpDir: join(dir, TEMP_DIR),
    io,
  });
}

class FileSessionLog implements SessionLog {
  /** What opening read, handed to the first read() so that opening reads the file once. */
  private loaded: LoadedLog | null;

  constructor(
    private readonly id: string,
    private readonly file: LogAppender,
    loaded: LoadedLog,
  ) {
    this.loaded = loaded;
  }

  get nextSeq(): number {
    return this.file.nextSeq;
  }

  async read(): Promise<LogRead> {
    const loaded = this.loaded ?? (await readLogFile(this.file.path));
    this.loaded = null;
    return { entries: loaded.entries, damage: loaded.damage };
  }

  async append<E extends NewEntry>(entry: E, options: { expectedSeq: number; sync: boolean }): Promise<E & { seq: number; ts: number }> {
    // Checked when the append's turn comes: appends asked for at once each name their own seq.
    return this.appendAll([entry], options).then((written) => written[0]!);
  }

  appendAll<E extends NewEntry>(
    entries: readonly E[],
    options: { expectedSeq: number; sync: boolean },
  ): Promise<(E & { seq: number; ts: number })[]> {
    this.loaded = null;
    return this.file.appendAll(entries, {
      sync: options.sync,
      check: (seq) => {
        if (options.expectedSeq !== seq) throw new SequenceConflictError(this.id, options.expectedSeq, seq);
      },
    });
  }

  sync(): Promise<void> {
    return this.file.sync();
  }

  get syncs(): number {
    return this.file.syncs;
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

function lastSeqOf(loaded: LoadedLog): number {
  let last = 0;
  for (const entry of loaded.entries) if (entry.seq > last) last = entry.seq;
  return last;
}

/**
 * Temporary files of atomic writes a crash interrupted: only in the session's .tmp/,
 * where no name is the model's (a file it calls `.notes.1.deadbeef.tmp` is its own).
 */
function removeTempFiles(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(join(dir, TEMP_DIR));
  } catch {
    return 0; // no write has needed it yet
  }
  for (const name of names) rmSync(join(dir, TEMP_DIR, name), { recursive: true, force: true });
  return names.length;
}
