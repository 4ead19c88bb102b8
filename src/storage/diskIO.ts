/**
 * How the file store's writes and syncs reach the disk without holding the event loop. A
 * write into the page cache can wait for the disk (a last page evicted, writeback
 * throttling) and an fdatasync always waits for it, for as long as the disk takes: done on
 * the loop, every other session in the process stops meanwhile. So on a disk they run on a
 * few threads of their own (`diskThreads`), shared by every session of the process: the
 * syncs of concurrent turns of different sessions are in flight together, and the block
 * layer flushes the disk's cache once for all the syncs waiting at that moment (group
 * commit; docs/storage.md says what that measured). On a memory-backed file system (tmpfs,
 * ramfs) neither a write nor a sync can wait for a device (fdatasync does nothing there):
 * they run in place, as a copy into memory.
 *
 * Completions come back through fairYield, so a burst of them does not run every waiting
 * session's next step in one turn of the loop.
 */
import { fdatasyncSync, fsyncSync, ftruncateSync, statfsSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import { yieldIfBusy } from '../runtime/fairYield.js';

export type SyncKind = 'data' | 'all';

export interface DiskIO {
  /** Whether the work leaves the event loop (false: it runs in place, on a memory-backed file system). */
  readonly offLoop: boolean;
  /**
   * Write all of `data` (at `position`, or at the end of a descriptor opened for appending),
   * then make it durable when `sync` says so. A failure rejects with the errno error, its
   * `written` saying how many bytes went in before it.
   */
  write(fd: number, data: Uint8Array, options?: { sync?: SyncKind; position?: number }): Promise<void>;
  /** fdatasync ('data') or fsync ('all'). */
  sync(fd: number, kind: SyncKind): Promise<void>;
  truncate(fd: number, size: number): Promise<void>;
  /** Syncs made so far (by this process, through this IO). */
  readonly syncs: number;
}

/** Syncs made by every DiskIO of the process (the concurrent bench counts them per turn). */
let processSyncs = 0;
export function syncsInProcess(): number {
  return processSyncs;
}

/** An errno error of a write, with how much of the data went in before it. */
export type WriteError = NodeJS.ErrnoException & { written?: number };

/** In place: for memory-backed file systems, and where a test injects faults into the synchronous fs calls. */
export function inlineDiskIO(): DiskIO {
  let syncs = 0;
  const sync = (fd: number, kind: SyncKind): void => {
    if (kind === 'data') fdatasyncSync(fd);
    else fsyncSync(fd);
    syncs++;
    processSyncs++;
  };
  return {
    offLoop: false,
    get syncs() {
      return syncs;
    },
    write: async (fd, data, options = {}) => {
      let written = 0;
      try {
        while (written < data.length)
          written += writeSync(
            fd,
            data,
            written,
            data.length - written,
            options.position === undefined ? null : options.position + written,
          );
        if (options.sync) sync(fd, options.sync);
      } catch (error) {
        (error as WriteError).written = written;
        throw error;
      }
      return yieldIfBusy();
    },
    sync: async (fd, kind) => {
      sync(fd, kind);
      return yieldIfBusy();
    },
    truncate: async (fd, size) => ftruncateSync(fd, size),
  };
}

interface Job {
  id: number;
  op: 'write' | 'sync' | 'truncate';
  fd: number;
  data?: Uint8Array;
  position?: number;
  sync?: SyncKind;
  size?: number;
}

/** What runs on each thread: one job at a time, the result posted back. CommonJS, so it loads from any build. */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const gate = workerData.syncGate;
parentPort.on('message', (job) => {
  let written = 0;
  try {
    if (job.op === 'write') {
      const data = job.data;
      while (written < data.length)
        written += fs.writeSync(job.fd, data, written, data.length - written, job.position === undefined ? null : job.position + written);
    } else if (job.op === 'truncate') fs.ftruncateSync(job.fd, job.size);
    if (job.sync) {
      if (gate) Atomics.wait(gate, 0, 0);
      if (job.sync === 'data') fs.fdatasyncSync(job.fd);
      else fs.fsyncSync(job.fd);
    }
    parentPort.postMessage({ id: job.id });
  } catch (error) {
    parentPort.postMessage({ id: job.id, written, error: { message: error.message, code: error.code, errno: error.errno, syscall: error.syscall } });
  }
});
`;

/** The disk threads a process starts at most, unless told otherwise. */
export const DEFAULT_DISK_THREADS = 8;

export interface DiskThreadsOptions {
  /** Threads at most, started as concurrent work needs them (default DEFAULT_DISK_THREADS). */
  threads?: number;
  /**
   * Tests: a disk as slow as a test says. Every sync waits, on its thread, while the first
   * element of `syncGate` (over a SharedArrayBuffer) is 0; the test stores 1 and notifies.
   */
  syncGate?: Int32Array;
}

/**
 * Off the loop, on threads of their own (not libuv's pool of 4, which DNS lookups and every
 * fs.promises call share, and whose size cannot be changed once a module has loaded). A
 * thread is started when every one is busy, up to `threads`: one session uses one.
 * Threads idle between jobs keep no process alive.
 */
export function diskThreads(options: DiskThreadsOptions = {}): DiskIO {
  const max = Math.max(1, options.threads ?? DEFAULT_DISK_THREADS);
  const idle: Worker[] = [];
  const all: Worker[] = [];
  const queue: Job[] = [];
  const pending = new Map<number, { resolve(): void; reject(error: unknown): void; worker?: Worker }>();
  let next = 1;
  let syncs = 0;

  const start = (): Worker => {
    // No flags of the process's own: under --input-type=module the eval would be ESM, and `require` undefined.
    const worker = new Worker(THREAD, { eval: true, execArgv: [], workerData: { syncGate: options.syncGate ?? null } });
    worker.on(
      'message',
      (done: { id: number; written?: number; error?: { message: string; code?: string; errno?: number; syscall?: string } }) => {
        const waiter = pending.get(done.id)!;
        pending.delete(done.id);
        hand(worker);
        if (!done.error) return waiter.resolve();
        const error = Object.assign(new Error(done.error.message), done.error, { written: done.written ?? 0 });
        waiter.reject(error);
      },
    );
    worker.on('error', (error) => {
      // A thread that dies fails its job; the next one gets a new thread.
      all.splice(all.indexOf(worker), 1);
      for (const [id, waiter] of pending)
        if (waiter.worker === worker) {
          pending.delete(id);
          waiter.reject(error);
        }
      if (queue.length) dispatch();
    });
    all.push(worker);
    return worker;
  };

  /** A thread is free: give it the next job, or let it idle (unref'd: it keeps no process alive). */
  const hand = (worker: Worker): void => {
    const job = queue.shift();
    if (job) return send(worker, job);
    worker.unref();
    idle.push(worker);
  };

  const send = (worker: Worker, job: Job): void => {
    pending.get(job.id)!.worker = worker;
    worker.postMessage(job);
  };

  const dispatch = (): void => {
    while (queue.length) {
      let worker = idle.pop();
      if (!worker) {
        if (all.length >= max) return; // queued: the next thread done takes it
        worker = start();
      }
      worker.ref();
      send(worker, queue.shift()!);
    }
  };

  const run = (job: Omit<Job, 'id'>): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      queue.push({ id, ...job });
      dispatch();
    }).then(yieldIfBusy);

  return {
    offLoop: true,
    get syncs() {
      return syncs;
    },
    write: (fd, data, options = {}) => {
      if (options.sync) {
        syncs++;
        processSyncs++;
      }
      return run({
        op: 'write',
        fd,
        data,
        ...(options.position === undefined ? {} : { position: options.position }),
        ...(options.sync ? { sync: options.sync } : {}),
      });
    },
    sync: (fd, kind) => {
      syncs++;
      processSyncs++;
      return run({ op: 'sync', fd, sync: kind });
    },
    truncate: (fd, size) => run({ op: 'truncate', fd, size }),
  };
}

const TMPFS_MAGIC = 0x01021994;
const RAMFS_MAGIC = 0x858458f6;

let shared: DiskIO | null = null;
let inline: DiskIO | null = null;
let override: DiskIO | null = null;

/** Whether `dir` is on a memory-backed file system, where a write or a sync never waits for a device. */
export function memoryBacked(dir: string): boolean {
  // A folder not made yet is where its nearest existing parent is.
  for (let at = dir; ; at = dirname(at)) {
    try {
      const type = statfsSync(at).type;
      return type === TMPFS_MAGIC || type === RAMFS_MAGIC;
    } catch {
      if (dirname(at) === at) return false;
    }
  }
}

/** The IO for files under `dir`: in place on a memory-backed file system, else the process's disk threads. */
export function diskIOFor(dir: string): DiskIO {
  if (override) return override;
  if (memoryBacked(dir)) return (inline ??= inlineDiskIO());
  return (shared ??= diskThreads());
}

/** Tests: every store of the process uses `io` until the returned function is called. */
export function useDiskIO(io: DiskIO): () => void {
  const before = override;
  override = io;
  return () => {
    override = before;
  };
}
