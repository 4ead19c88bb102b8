/**
 * One writer per session: `session.lock` in the session's directory names the process
 * that has it open (pid, host, since when). Created with O_EXCL, so two processes cannot
 * both create it. A lock whose process is gone (killed, crashed) is stale: the next
 * opener takes it over by renaming it aside — a rename succeeds for one process only —
 * and checking that what it moved is the stale lock it judged, not a fresh one.
 */
import { closeSync, linkSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FILE_MODE } from './atomicWrite.js';

export const LOCK_FILE = 'session.lock';

/** A lock file still empty or half-written is being created: it is stale only after this. */
const UNREADABLE_GRACE_MS = 2_000;

interface LockRecord {
  pid: number;
  host: string;
  since: number;
  nonce: string;
}

export class SessionInUseError extends Error {
  override name = 'SessionInUseError';
  constructor(
    message: string,
    readonly pid: number | null,
    readonly host: string | null,
  ) {
    super(message);
  }
}

/** Lock files this process holds, released at exit if their sessions were never closed. */
const held = new Map<string, string>();
let exitHook = false;

export class SessionLock {
  private constructor(
    readonly path: string,
    private readonly nonce: string,
  ) {}

  static acquire(dir: string, now: () => number = Date.now): SessionLock {
    const path = join(dir, LOCK_FILE);
    const record: LockRecord = { pid: process.pid, host: hostname(), since: now(), nonce: randomBytes(8).toString('hex') };
    // A stale lock taken over in one round is created in the next.
    for (let round = 0; round < 3; round++) {
      if (tryCreate(path, record)) {
        held.set(path, record.nonce);
        if (!exitHook) {
          exitHook = true;
          process.once('exit', releaseAllHeld);
        }
        return new SessionLock(path, record.nonce);
      }
      const holder = readLock(path);
      const id = basename(dir);
      if (holder?.pid === process.pid && holder.host === record.host) {
        throw new SessionInUseError(
          `session ${id} is already open in this process (pid ${process.pid}); close it first`,
          holder.pid,
          holder.host,
        );
      }
      if (!isStale(path, holder, record.host, now)) {
        const since = holder ? ` since ${new Date(holder.since).toISOString()}` : '';
        const where = holder && holder.host !== record.host ? ` on ${holder.host}` : '';
        throw new SessionInUseError(
          holder
            ? `session ${id} is in use by pid ${holder.pid}${where}${since}. If no workmem process has that pid, remove ${path}`
            : `session ${id} is being opened by another process (${path} is being written)`,
          holder?.pid ?? null,
          holder?.host ?? null,
        );
      }
      takeOver(path, holder);
    }
    throw new SessionInUseError(`session ${basename(dir)}: another process keeps taking its lock (${path})`, null, null);
  }

  /** Remove the lock if it is still ours. */
  release(): void {
    if (held.get(this.path) !== this.nonce) return;
    held.delete(this.path);
    if (readLock(this.path)?.nonce === this.nonce) unlinkQuietly(this.path);
  }
}

function tryCreate(path: string, record: LockRecord): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, `${JSON.stringify(record)}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

function readLock(path: string): LockRecord | null {
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockRecord>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.nonce === 'string') {
      return { pid: value.pid, host: value.host, since: typeof value.since === 'number' ? value.since : 0, nonce: value.nonce };
    }
  } catch {
    /* missing, empty or half-written */
  }
  return null;
}

function isStale(path: string, holder: LockRecord | null, host: string, now: () => number): boolean {
  if (holder) return holder.host === host && !processAlive(holder.pid);
  try {
    return now() - statSync(path).mtimeMs > UNREADABLE_GRACE_MS;
  } catch {
    return true; // gone meanwhile: the next round creates it
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function takeOver(path: string, judged: LockRecord | null): void {
  const aside = join(dirname(path), `.${LOCK_FILE}.stale-${randomBytes(6).toString('hex')}`);
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // another process moved it first
    throw error;
  }
  const moved = readLock(aside);
  if (judged && moved?.nonce !== judged.nonce) {
    // A fresh lock replaced the stale one between our read and our rename: put it back.
    try {
      linkSync(aside, path);
    } catch {
      /* a third process holds it now; either way it is not ours */
    }
  }
  unlinkQuietly(aside);
}

function releaseAllHeld(): void {
  for (const [path, nonce] of held) if (readLock(path)?.nonce === nonce) unlinkQuietly(path);
  held.clear();
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
}
