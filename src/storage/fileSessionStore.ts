/**
 * The filesystem session store, the default: one directory per session under
 * `<home>/sessions/--<cwd>--/<id>/` (docs/design.md §2), found by walking those folders
 * and described by each meta.json. Opening takes session.lock (SessionLock); everything
 * else is FileSessionStorage's. Reading (FileSessionReader) takes no lock.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DIR_MODE } from './atomicWrite.js';
import { diskIOFor, type DiskIO } from './diskIO.js';
import { FileSessionReader } from './fileSessionReader.js';
import { FileSessionStorage, writeMetaFile } from './fileSessionStorage.js';
import { SESSION_FILES, SESSION_ID, sessionDir, sessionsRoot } from './sessionPaths.js';
import { SessionLock, type LockTiming } from './sessionLock.js';
import type { CreateSessionOptions, OpenOptions, SessionStore, SessionSummary } from './sessionStore.js';
import { SessionNotFoundError } from './storeErrors.js';

export interface FileStoreOptions {
  /** The root, `~/.workmem` by default (see defaultHome). */
  home: string;
  /** The lock's heartbeat and staleness (tests shorten them). */
  lockTiming?: Partial<LockTiming>;
  /** How writes and syncs reach the disk; default by the file system (diskIO.ts). */
  diskIO?: DiskIO;
}

export function fileSessionStore(options: FileStoreOptions): SessionStore {
  return new FileSessionStore(options.home, options.lockTiming ?? {}, options.diskIO ?? null);
}

class FileSessionStore implements SessionStore {
  constructor(
    private readonly home: string,
    private readonly lockTiming: Partial<LockTiming>,
    private readonly io: DiskIO | null,
  ) {}

  /** The IO for a session's directory: the store's, or the one its file system calls for. */
  private ioFor(dir: string): DiskIO {
    return this.io ?? diskIOFor(dir);
  }

  get location(): string {
    return sessionsRoot(this.home);
  }

  async create(options: CreateSessionOptions): Promise<FileSessionStorage> {
    const { id, cwd } = options.meta;
    if (!SESSION_ID.test(id)) throw new TypeError(`${JSON.stringify(id)} is not a session id (a lowercase UUID)`);
    if (this.dirsOf(id).length) throw new Error(`session ${id} exists already`);
    const dir = sessionDir(this.home, cwd, id);
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    chmodSync(dir, DIR_MODE);
    const lock = SessionLock.acquire(dir, this.lockTiming);
    const io = this.ioFor(dir);
    return holding(lock, async () => {
      const storage = await FileSessionStorage.open(id, dir, lock, { ...options, fresh: true, io });
      await writeMetaFile(dir, options.meta, options.redact ?? ((text) => text), true, io);
      return storage;
    });
  }

  async open(id: string, options: OpenOptions = {}): Promise<FileSessionStorage> {
    const dir = this.dirOf(id);
    const lock = SessionLock.acquire(dir, this.lockTiming);
    return holding(lock, () => FileSessionStorage.open(id, dir, lock, { ...options, io: this.ioFor(dir) }));
  }

  async read(id: string): Promise<FileSessionReader> {
    return new FileSessionReader(id, this.dirOf(id)); // no lock: a reader changes nothing
  }

  async list(options: { cwd?: string } = {}): Promise<SessionSummary[]> {
    const found: SessionSummary[] = [];
    for (const dir of this.sessionDirs()) {
      const summary = summaryOf(dir);
      if (summary && (!options.cwd || summary.cwd === options.cwd)) found.push(summary);
    }
    return found.sort((a, b) => b.createdAt - a.createdAt);
  }

  async find(idOrPrefix: string): Promise<SessionSummary> {
    if (typeof idOrPrefix !== 'string' || !/^[0-9a-f-]{4,36}$/i.test(idOrPrefix)) {
      throw new SessionNotFoundError(`${JSON.stringify(idOrPrefix)} is not a session id (a UUID, or at least its first 4 characters)`);
    }
    const prefix = idOrPrefix.toLowerCase();
    // A whole id is looked up directly: a listing that reads each of its sessions stays linear.
    const dirs = SESSION_ID.test(prefix) ? this.dirsOf(prefix) : this.sessionDirs().filter((dir) => idOf(dir).startsWith(prefix));
    const exact = dirs.filter((dir) => idOf(dir) === prefix);
    const chosen = exact.length === 1 ? exact : dirs;
    if (chosen.length > 1) throw new SessionNotFoundError(`session id ${idOrPrefix} is ambiguous: ${chosen.length} sessions start with it`);
    if (chosen.length === 0) throw new SessionNotFoundError(`no session with id ${idOrPrefix} under ${this.location}`);
    const dir = chosen[0]!;
    // A session whose meta.json is unreadable is still found (opening rebuilds it from the log).
    return summaryOf(dir) ?? { id: idOf(dir), location: dir, cwd: '', createdAt: 0, name: null };
  }

  async remove(id: string): Promise<void> {
    const dir = this.dirOf(id);
    const lock = SessionLock.acquire(dir, this.lockTiming); // refuses a session in use
    try {
      rmSync(dir, { recursive: true, force: true });
    } finally {
      lock.release();
    }
  }

  async close(): Promise<void> {
    /* nothing held: each session's lock is its storage's */
  }

  /** The directory of the session with exactly this id. */
  private dirOf(id: string): string {
    const dirs = SESSION_ID.test(id) ? this.dirsOf(id) : [];
    if (dirs.length === 0) throw new SessionNotFoundError(`no session with id ${id} under ${this.location}`);
    if (dirs.length > 1) throw new SessionNotFoundError(`session ${id} is in ${dirs.length} folders: ${dirs.join(', ')}`);
    return dirs[0]!;
  }

  /** One look per cwd folder, not one per session: a listing reads each session by its id. */
  private dirsOf(id: string): string[] {
    const root = this.location;
    return safeReaddir(root)
      .map((cwdDir) => join(root, cwdDir, id))
      .filter(isDir);
  }

  private sessionDirs(): string[] {
    const root = this.location;
    const dirs: string[] = [];
    for (const cwdDir of safeReaddir(root)) {
      for (const name of safeReaddir(join(root, cwdDir))) {
        const dir = join(root, cwdDir, name);
        if (SESSION_ID.test(name) && isDir(dir)) dirs.push(dir);
      }
    }
    return dirs;
  }
}

/** Run `open` holding `lock`; release it if opening fails. */
async function holding<T>(lock: SessionLock, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    lock.release();
    throw error;
  }
}

function summaryOf(dir: string): SessionSummary | null {
  const id = idOf(dir);
  try {
    const meta = JSON.parse(readFileSync(join(dir, SESSION_FILES.meta), 'utf8')) as Record<string, unknown>;
    if (meta.id !== id || typeof meta.cwd !== 'string' || typeof meta.createdAt !== 'number') return null;
    return { id, location: dir, cwd: meta.cwd, createdAt: meta.createdAt, name: typeof meta.name === 'string' ? meta.name : null };
  } catch {
    return null; // no readable meta.json: not listed (opening can still rebuild it)
  }
}

function idOf(dir: string): string {
  return dir.split(/[/\\]/).pop()!;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function isDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
