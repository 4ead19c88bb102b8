/**
 * Storage faults by injection: the synchronous fs calls workmem writes with are wrapped
 * so that, while a fault is armed, the matching call on a matching file fails with the
 * errno a full, read-only or failing disk gives; on a disk, where writes and syncs go to
 * DiskIO's threads, the process's DiskIO is wrapped the same way. `syncBuiltinESMExports` makes the
 * wrappers reach modules that imported the functions by name. Files are matched by
 * path — for calls on a descriptor, the path /proc/self/fd says it has — so the test
 * runner's own files are never touched.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { diskIOFor, useDiskIO, type DiskIO } from '../../src/storage/diskIO.js';

export type FsOp = 'open' | 'write' | 'sync' | 'rename';

export interface FsFault {
  /** The files it hits (matched against the absolute path). */
  file: RegExp;
  op: FsOp;
  code: 'ENOSPC' | 'EACCES' | 'EROFS' | 'EIO' | 'EDQUOT';
  /** Matching calls let through before the first failure (default 0). */
  skip?: number;
  /** Failures before the fault lifts by itself (default: until disarmed). */
  times?: number;
}

const ERRNO: Record<FsFault['code'], [number, string]> = {
  ENOSPC: [-28, 'no space left on device'],
  EACCES: [-13, 'permission denied'],
  EROFS: [-30, 'read-only file system'],
  EIO: [-5, 'i/o error'],
  EDQUOT: [-122, 'disk quota exceeded'],
};

const SYSCALL: Record<FsOp, string> = { open: 'open', write: 'write', sync: 'fsync', rename: 'rename' };

export class FsFaults {
  private fault: FsFault | null = null;
  private seen = 0;
  private failed = 0;
  private readonly originals: Partial<Record<keyof typeof fs, unknown>> = {};

  /** How many calls failed since the fault was armed. */
  get failures(): number {
    return this.failed;
  }

  install(): this {
    const wrap = <K extends keyof typeof fs>(name: K, op: FsOp, pathOf: (args: unknown[]) => string | null): void => {
      const original = fs[name] as (...args: unknown[]) => unknown;
      this.originals[name] = original;
      const faults = this;
      (fs as unknown as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
        faults.check(op, () => pathOf(args));
        return original.apply(this, args);
      };
    };
    const byFd = (args: unknown[]): string | null => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${args[0] as number}`);
      } catch {
        return null;
      }
    };
    const byPath = (args: unknown[]): string | null => (typeof args[0] === 'string' ? args[0] : null);
    wrap('openSync', 'open', (args) => (/[wa]/.test(String(args[1] ?? 'r')) ? byPath(args) : null));
    wrap('writeSync', 'write', byFd);
    wrap('fsyncSync', 'sync', byFd);
    wrap('fdatasyncSync', 'sync', byFd);
    wrap('renameSync', 'rename', (args) => (typeof args[1] === 'string' ? args[1] : null));
    syncBuiltinESMExports();
    // Writes and syncs made off the event loop (on a disk: DiskIO's threads, which have fs
    // calls of their own) meet the same faults, checked before each one goes.
    const io = diskIOFor(tmpdir());
    if (io.offLoop) this.restoreIO = useDiskIO(this.faulty(io, byFd));
    return this;
  }

  uninstall(): void {
    for (const [name, original] of Object.entries(this.originals)) (fs as unknown as Record<string, unknown>)[name] = original;
    syncBuiltinESMExports();
    this.restoreIO?.();
    this.restoreIO = null;
  }

  private restoreIO: (() => void) | null = null;

  /** `inner` with the armed fault: a failed write writes nothing; a failed sync comes after its write. */
  private faulty(inner: DiskIO, byFd: (args: unknown[]) => string | null): DiskIO {
    const path = (fd: number) => () => byFd([fd]);
    return {
      offLoop: inner.offLoop,
      get syncs() {
        return inner.syncs;
      },
      write: async (fd, data, options = {}) => {
        this.check('write', path(fd));
        if (options.sync) {
          try {
            this.check('sync', path(fd));
          } catch (error) {
            await inner.write(fd, data, { ...(options.position === undefined ? {} : { position: options.position }) });
            throw Object.assign(error as Error, { written: data.length });
          }
        }
        return inner.write(fd, data, options);
      },
      sync: async (fd, kind) => {
        this.check('sync', path(fd));
        return inner.sync(fd, kind);
      },
      truncate: (fd, size) => inner.truncate(fd, size),
    };
  }

  arm(fault: FsFault): void {
    this.fault = fault;
    this.seen = 0;
    this.failed = 0;
  }

  disarm(): void {
    this.fault = null;
  }

  private check(op: FsOp, path: () => string | null): void {
    const fault = this.fault;
    if (!fault || fault.op !== op) return;
    const file = path();
    if (file === null || !fault.file.test(file)) return;
    if (this.seen++ < (fault.skip ?? 0)) return;
    if (fault.times !== undefined && this.failed >= fault.times) return;
    this.failed++;
    const [errno, text] = ERRNO[fault.code];
    const error = new Error(`${fault.code}: ${text}, ${SYSCALL[op]} '${file}'`) as NodeJS.ErrnoException;
    Object.assign(error, { code: fault.code, errno, syscall: SYSCALL[op], path: file });
    throw error;
  }
}
