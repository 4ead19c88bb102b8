/**
 * One writer per session: `session.lock` in the session's directory names the process
 * that has it open (pid, host, pid namespace, since when). Created with O_EXCL, so two
 * processes cannot both create it.
 *
 * Staleness follows a heartbeat, not the pid: the holder touches the lock's mtime every
 * few seconds (an unref'd timer), and a lock not renewed for `staleMs` is stale, whoever
 * and wherever its holder is. A pid is trusted only where it means something: when the
 * lock was written in this very pid namespace (same host name, boot id and namespace
 * inode) and that pid is gone, the holder is dead and the lock is stale at once. In any
 * other namespace — a container with the same host name, another machine — `kill(pid, 0)`
 * says nothing about the holder, so only the heartbeat counts.
 *
 * Taking over is a claim: the taker creates `session.lock.claim-<inode>` with O_EXCL (one
 * winner per stale lock), checks that the lock is still that same, still stale file, and
 * only then removes it; the lock itself is then created with O_EXCL like any other, so
 * two processes never both hold it.
 */
import { closeSync, fstatSync, futimes, openSync, readFileSync, readlinkSync, readSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FILE_MODE } from './atomicWrite.js';

export const LOCK_FILE = 'session.lock';

export interface LockTiming {
  /** How often the holder renews its heartbeat. */
  heartbeatMs: number;
  /** A heartbeat older than this is stale: several heartbeats, so a busy event loop is not taken for a dead one. */
  staleMs: number;
}

export const DEFAULT_LOCK_TIMING: LockTiming = { heartbeatMs: 2_000, staleMs: 15_000 };

/** A lock file still empty or half-written is being created: it is stale only after this. */
const UNREADABLE_GRACE_MS = 2_000;
/** A takeover takes milliseconds: a claim older than this was left by a taker that died. */
const CLAIM_GRACE_MS = 5_000;

interface LockRecord {
  pid: number;
  host: string;
  since: number;
  nonce: string;
  /** boot id and pid namespace of the holder, where the system says (Linux). */
  pidns?: string;
}

/** The lock file as one read saw it: its inode, heartbeat and content. */
interface Seen {
  ino: number;
  mtimeMs: number;
  record: LockRecord | null;
}

/** The session is open in another process or instance: names the holder and since when. */
export class SessionInUseError extends Error {
  override name = 'SessionInUseError';
  /** Who holds the session, as the message names it (`pid 123`), or null when unknown. */
  readonly holder: string | null;
  constructor(
    message: string,
    readonly pid: number | null,
    readonly host: string | null,
    /** Until when the holder's lease runs, where a store knows (epoch ms). */
    readonly until: number | null = null,
  ) {
    super(message);
    this.holder = pid === null ? null : `pid ${pid}`;
  }
}

/** Lock files this process holds, released at exit if their sessions were never closed. */
const held = new Map<string, string>();
let exitHook = false;

export class SessionLock {
  private constructor(
    readonly path: string,
    /** This holder's identity, written in the lock file. */
    readonly nonce: string,
    private heart: Heartbeat | null,
    private readonly heartbeat: NodeJS.Timeout,
  ) {}

  static acquire(dir: string, timing: Partial<LockTiming> = {}): SessionLock {
    const { heartbeatMs, staleMs } = { ...DEFAULT_LOCK_TIMING, ...timing };
    const path = join(dir, LOCK_FILE);
    const record: LockRecord = { pid: process.pid, host: hostname(), since: Date.now(), nonce: randomBytes(8).toString('hex') };
    const ns = pidNamespace();
    if (ns) record.pidns = ns;
    const id = basename(dir);
    // A stale lock removed in one round is created in the next.
    for (let round = 0; round < 4; round++) {
      const fd = tryCreate(path, record);
      if (fd !== null) {
        held.set(path, record.nonce);
        if (!exitHook) {
          exitHook = true;
          process.once('exit', releaseAllHeld);
        }
        // The heartbeat touches the file we created, by descriptor: never a lock that replaced ours.
        const heart = new Heartbeat(fd);
        const timer = setInterval(() => heart.beat(), heartbeatMs);
        timer.unref();
        return new SessionLock(path, record.nonce, heart, timer);
      }
      const seen = inspect(path);
      if (!seen) continue; // released meanwhile
      const holder = seen.record;
      if (holder?.pid === process.pid && holder.host === record.host && holder.pidns === record.pidns) {
        throw new SessionInUseError(
          `session ${id} is already open in this process (pid ${process.pid}); close it first`,
          holder.pid,
          holder.host,
        );
      }
      if (!isStale(seen, record, staleMs)) {
        const where = holder && holder.host !== record.host ? ` on ${holder.host}` : '';
        const beat = Math.max(0, Math.round((Date.now() - seen.mtimeMs) / 1000));
        throw new SessionInUseError(
          holder
            ? `session ${id} is in use by pid ${holder.pid}${where} since ${new Date(holder.since).toISOString()} ` +
                `(its heartbeat was renewed ${beat} s ago). Wait for it to finish or stop that process; ` +
                `a holder that stops renewing is taken over after ${Math.round(staleMs / 1000)} s, or remove ${path} ` +
                `if you are sure no workmem process has it open`
            : `session ${id} is being opened by another process (${path} is being written)`,
          holder?.pid ?? null,
          holder?.host ?? null,
        );
      }
      removeStale(path, seen, record, staleMs);
    }
    throw new SessionInUseError(`session ${id}: another process keeps taking its lock (${path}); try again`, null, null);
  }

  /** Renew the heartbeat now; false when the lock file is no longer ours (released, or taken over as stale). */
  renew(): boolean {
    if (this.heart === null || held.get(this.path) !== this.nonce) return false;
    if (inspect(this.path)?.record?.nonce !== this.nonce) return false;
    this.heart.beat();
    return true;
  }

  /** Remove the lock if it is still ours. */
  release(): void {
    clearInterval(this.heartbeat);
    this.heart?.stop();
    this.heart = null;
    if (held.get(this.path) !== this.nonce) return;
    held.delete(this.path);
    if (inspect(this.path)?.record?.nonce === this.nonce) unlinkQuietly(this.path);
  }
}

function tryCreate(path: string, record: LockRecord): number | null {
  let fd: number;
  try {
    fd = openSync(path, 'wx', FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  }
  try {
    writeSync(fd, `${JSON.stringify(record)}\n`);
  } catch (error) {
    closeQuietly(fd);
    unlinkQuietly(path);
    throw error;
  }
  return fd;
}

/**
 * A held lock's heartbeat: its mtime touched by descriptor, off the event loop (a thousand
 * open sessions beat 500 times a second). The descriptor is closed only once no touch is in
 * flight: its number, reused meanwhile, would name another file.
 */
class Heartbeat {
  private touching = false;
  private stopped = false;

  constructor(private readonly fd: number) {}

  beat(): void {
    if (this.touching || this.stopped) return;
    this.touching = true;
    const now = new Date();
    futimes(this.fd, now, now, () => {
      // A full or read-only disk: the next beat tries again; meanwhile the lock ages.
      this.touching = false;
      if (this.stopped) closeQuietly(this.fd);
    });
  }

  stop(): void {
    this.stopped = true;
    if (!this.touching) closeQuietly(this.fd);
  }
}

/** Inode, heartbeat and content from one open file, so the three belong together; null when there is no lock. */
function inspect(path: string): Seen | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const stat = fstatSync(fd);
    const buffer = Buffer.alloc(Math.min(stat.size, 4096));
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    return { ino: stat.ino, mtimeMs: stat.mtimeMs, record: parseRecord(buffer.subarray(0, n).toString('utf8')) };
  } catch {
    return null;
  } finally {
    closeQuietly(fd);
  }
}

function parseRecord(text: string): LockRecord | null {
  try {
    const value = JSON.parse(text) as Partial<LockRecord>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.nonce === 'string') {
      return {
        pid: value.pid,
        host: value.host,
        since: typeof value.since === 'number' ? value.since : 0,
        nonce: value.nonce,
        ...(typeof value.pidns === 'string' ? { pidns: value.pidns } : {}),
      };
    }
  } catch {
    /* empty or half-written */
  }
  return null;
}

function isStale(seen: Seen, self: LockRecord, staleMs: number): boolean {
  const age = Date.now() - seen.mtimeMs;
  const holder = seen.record;
  if (!holder) return age > UNREADABLE_GRACE_MS;
  // Only in our own pid namespace does a missing pid prove the holder dead.
  const sameNamespace = holder.host === self.host && holder.pidns !== undefined && holder.pidns === self.pidns;
  if (sameNamespace && !processAlive(holder.pid)) return true;
  return age > staleMs;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove the stale lock `judged`, if this process wins the claim to it and it is still
 * there, still the same file and still stale. Losers return: the next round finds the
 * winner's lock (and is refused) or no lock (and creates one, with O_EXCL).
 */
function removeStale(path: string, judged: Seen, self: LockRecord, staleMs: number): void {
  for (let generation = 0; generation < 3; generation++) {
    const claim = `${path}.claim-${judged.ino}-${generation}`;
    let fd: number;
    try {
      fd = openSync(claim, 'wx', FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let age = 0;
      try {
        age = Date.now() - statSync(claim).mtimeMs;
      } catch {
        return; // the claimant finished meanwhile
      }
      if (age > CLAIM_GRACE_MS) continue; // its taker died mid-claim: the next generation
      return; // another process is taking it over right now
    }
    closeQuietly(fd);
    try {
      const now = inspect(path);
      if (now && now.ino === judged.ino && now.record?.nonce === judged.record?.nonce && isStale(now, self, staleMs)) {
        unlinkQuietly(path);
        for (let older = 0; older < generation; older++) unlinkQuietly(`${path}.claim-${judged.ino}-${older}`);
      }
    } finally {
      unlinkQuietly(claim);
    }
    return;
  }
}

let namespace: string | null | undefined;

/** This process's pid namespace, as `<boot id>/<namespace>`, or null where the system does not say. */
export function pidNamespace(): string | null {
  if (namespace === undefined) {
    try {
      namespace = `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`;
    } catch {
      namespace = null;
    }
  }
  return namespace;
}

function releaseAllHeld(): void {
  for (const [path, nonce] of held) if (inspect(path)?.record?.nonce === nonce) unlinkQuietly(path);
  held.clear();
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    /* already gone */
  }
}
