/**
 * The storage port: what the rest of workmem needs from wherever sessions are kept — a
 * session's log, its working-memory files, its meta and who may write to it (a lease).
 * Interfaces only; the filesystem store (fileSessionStore.ts) implements them with the
 * layout of docs/design.md §2, a database store with tables. Everything is async because
 * a store may be across a network.
 *
 * Rules every store keeps (test/storage/contract.ts checks them):
 * - One writer per session: open() takes the session's lease or fails with
 *   SessionInUseError naming the holder; close() or lease.release() gives it back.
 * - The log is append-only and gap-free: append() names the sequence number it expects to
 *   get and is refused (SequenceConflictError, nothing written) when that is not the next.
 * - Memory paths are relative to working-memory/ (the prefix is accepted), confined to it
 *   (PathRefusedError for `..`, absolute paths, links), and every write is atomic.
 * - read() needs no lease: a reader sees a session another instance may be writing meanwhile,
 *   and changes nothing (no repair, no rename, no lease taken).
 * - The trace is diagnostic: its writes are queued, in order, never awaited by a turn and never
 *   failing one (a lost trace line loses nothing of the session; the log is the record).
 */
import type { Damage, LogEntry, NewEntry } from './messageLog.js';
import type { Repair, SessionMeta } from './sessionMeta.js';
import type { StateStore } from './stateStore.js';

/** Masks secrets in text before a store writes it (see secrets/redact.ts). */
export type Redact = (text: string) => string;

/** A session as a listing shows it, without opening it. */
export interface SessionSummary {
  id: string;
  /** Where the session lives, for messages and tools: its directory for files. */
  location: string;
  cwd: string;
  createdAt: number;
  name: string | null;
}

export interface OpenOptions {
  /** Applied to every log line and meta written. */
  redact?: Redact;
  /** The clock for entry timestamps. */
  now?: () => number;
}

export interface CreateSessionOptions extends OpenOptions {
  /** The session's first meta; its id and cwd name the new session (the id must be unused). */
  meta: SessionMeta;
}

/** A backend that keeps sessions. */
export interface SessionStore {
  /** Where the store is, for messages (a directory, a database). */
  readonly location: string;
  /** A new session with an empty log, its working-memory layout and `meta`, opened under its lease. */
  create(options: CreateSessionOptions): Promise<SessionStorage>;
  /** Open a session by its full id, taking its lease (SessionInUseError while another holds it). */
  open(id: string, options?: OpenOptions): Promise<SessionStorage>;
  /** Every session the store has, newest first; `cwd` limits them to one working directory. */
  list(options?: { cwd?: string }): Promise<SessionSummary[]>;
  /** The session whose id is `idOrPrefix` or uniquely starts with it (SessionNotFoundError otherwise). */
  find(idOrPrefix: string): Promise<SessionSummary>;
  /** Read a session by its full id without taking its lease (SessionNotFoundError when there is none). */
  read(id: string): Promise<SessionReader>;
  /** Delete a session and everything in it; refused (SessionInUseError) while another holds its lease. */
  remove(id: string): Promise<void>;
  /**
   * The key-value state of its sessions (trackers, item memory), when the store keeps it
   * itself, as a database does, so that any instance finds it; absent for files, whose
   * state is under `<home>/state/`. A keyv given by the host (`stateStore`) wins over both.
   */
  state?(): StateStore;
  /** Let go of what the store itself holds (connections); sessions opened from it are closed by their owners. */
  close(): Promise<void>;
}

/** One open session, held under a lease. */
export interface SessionStorage {
  readonly id: string;
  /** Where it lives, as in SessionSummary. */
  readonly location: string;
  /** The working directory it belongs to, where the store keeps it apart from the meta (a rebuilt meta needs it). */
  readonly cwd?: string;
  readonly log: SessionLog;
  readonly memory: MemoryFiles;
  /** The session's trace (what the visualizer replays), written off the turn's path. */
  readonly trace: TraceWriter;
  readonly lease: Lease;
  /** What the store itself found and mended when it opened the session (e.g. leftovers of interrupted writes). */
  readonly openNotes: readonly string[];
  readMeta(): Promise<MetaRead>;
  /** Replace the meta. `durable: false` may skip flushing (the meta is rebuilt from the log after a crash). */
  writeMeta(meta: SessionMeta, options?: { durable?: boolean }): Promise<void>;
  /**
   * Write `files` into working-memory/ and append `entry` as one unit (a compaction's
   * archive and the entry that names it). A database commits both or neither; the file
   * store writes the files first, durably, then the entry, so a crash between them leaves
   * an archive that no entry names, never an entry naming a missing archive. Refused as
   * append() and MemoryFiles.write() are (nothing written by a database then).
   */
  commit<E extends NewEntry>(
    files: readonly MemoryWrite[],
    entry: E,
    options: { expectedSeq: number },
  ): Promise<E & { seq: number; ts: number }>;
  /** Replace the damage report (damage.json for files): damaged log lines and repairs made. */
  writeDamage(report: DamageReport): Promise<void>;
  /** Make what was appended durable, write what is pending, release the lease. */
  close(): Promise<void>;
}

/** A write into working-memory/ that goes with a log entry: the text as stored (already redacted). */
export interface MemoryWrite {
  path: string;
  content: string;
  /** Add `content` as a section of the file (MemoryFiles.append) instead of replacing it. */
  append: boolean;
}

/**
 * A session read without its lease, as `workmem sessions show`, `memory show` and the
 * visualizer see it. Each call reads what is there at that moment: a writer may go on meanwhile.
 */
export interface SessionReader {
  readonly id: string;
  /** Where it lives, as in SessionSummary. */
  readonly location: string;
  /** The meta as stored; nothing is rebuilt or moved aside when it is unreadable. */
  readMeta(): Promise<MetaRead>;
  /** The log, in order, damaged lines reported and skipped. */
  readLog(): Promise<LogRead>;
  /** Its working-memory files, to read only. */
  readonly memory: MemoryReader;
  /** The trace's records (one JSON text each, no newline), in the order written; [] when it has none. */
  readTrace(): Promise<string[]>;
}

/** A session's working-memory files, to read only. */
export type MemoryReader = Pick<MemoryFiles, 'location' | 'read' | 'list' | 'exists' | 'stat'>;

/**
 * Where a session's trace goes. A trace is diagnostic: write() queues and returns at once,
 * never throws, and keeps the order; what cannot be stored is dropped (counted), never retried
 * at the expense of a turn.
 */
export interface TraceWriter {
  /** Queue trace records, each one JSON text followed by a newline. */
  write(lines: readonly string[]): void;
  /** Resolves when everything queued so far is stored or given up; never rejects. */
  flush(): Promise<void>;
  /** Records given up (a full disk, a lost connection, a lost lease). */
  readonly dropped: number;
}

export type MetaRead =
  | { ok: true; meta: SessionMeta }
  /** Missing or unreadable; `problem` says what and what the store did with the old one. */
  | { ok: false; problem: string };

export interface DamageReport {
  checkedAt: number;
  lines: readonly Damage[];
  repairs: readonly Repair[];
}

export interface LogRead {
  /** Entries in log order (the order they were appended). */
  entries: LogEntry[];
  /** Lines that could not be read; they are skipped, never rewritten. */
  damage: Damage[];
}

export interface SessionLog {
  /** The sequence number the next append gets. */
  readonly nextSeq: number;
  read(): Promise<LogRead>;
  /**
   * Append one entry, stamped with its seq and time. Refused with SequenceConflictError,
   * nothing written, when `expectedSeq` is not `nextSeq`; `sync` makes it durable before
   * the promise resolves.
   */
  append<E extends NewEntry>(entry: E, options: { expectedSeq: number; sync: boolean }): Promise<E & { seq: number; ts: number }>;
  /**
   * Append `entries` in order, as append() would one after another from `expectedSeq` on,
   * but together: the file store writes them in one write and syncs once. Optional: without
   * it they are appended one at a time.
   */
  appendAll?<E extends NewEntry>(
    entries: readonly E[],
    options: { expectedSeq: number; sync: boolean },
  ): Promise<(E & { seq: number; ts: number })[]>;
  /** Make every entry appended so far durable. */
  sync(): Promise<void>;
  /** Durable flushes made so far (fdatasync, for files), where the store counts them. */
  readonly syncs?: number;
}

/**
 * Who may write to a session. A database store checks `token` on every write and refuses
 * a holder whose lease was taken over; for files it is the lock file's nonce.
 */
export interface Lease {
  /** The holder's identity: a fencing token that grows at every takeover, or a nonce. */
  readonly token: string;
  /** Who holds it, in words (pid and host for files). */
  readonly holder: string;
  /** Extend the lease; LeaseLostError when another holder has taken it. */
  renew(): Promise<void>;
  /** Give the lease back; a no-op when already released. */
  release(): Promise<void>;
}

/** A file or folder inside working-memory/. */
export interface MemoryEntry {
  /** Relative to working-memory/, forward slashes, e.g. `detail/design.md`. */
  path: string;
  kind: 'file' | 'folder' | 'link' | 'other';
  bytes: number;
  /** Changes whenever the content does (for a folder: whenever an entry is added or removed). */
  version: string;
  /** A file that is also reachable under another name (a hard link for files): never read. */
  aliased: boolean;
}

/** A session's working-memory files. Every path is confined (PathRefusedError otherwise). */
export interface MemoryFiles {
  /** Where the files are, for tools (working-memory/ for files). */
  readonly location: string;
  /**
   * A file's text. Refused (PathRefusedError) when missing, not a plain file, or larger
   * than `maxBytes` — unless `head`, which returns only its first `maxBytes` bytes.
   */
  read(path: string, options: { maxBytes: number; head?: boolean }): Promise<string>;
  /** Replace (or create) a file atomically, creating its folders: readers see the old text or the new. */
  write(path: string, content: string): Promise<{ created: boolean }>;
  /**
   * Add `section` to a file atomically: its text with trailing blank space trimmed, a
   * `---` rule between blank lines, then the section; the section alone when there is no file.
   */
  append(path: string, section: string): Promise<{ created: boolean; bytes: number }>;
  /** The entries directly inside a folder, sorted by name; [] when it does not exist. Temporary files are not listed. */
  list(folder: string): Promise<MemoryEntry[]>;
  exists(path: string): Promise<boolean>;
  /** One entry, or null when nothing is there. A link is reported as kind 'link', never followed. */
  stat(path: string): Promise<MemoryEntry | null>;
  /** Several entries at once (one round trip to a database), as stat gives each. Optional: stat is asked for each otherwise. */
  statAll?(paths: readonly string[]): Promise<(MemoryEntry | null)[]>;
}
