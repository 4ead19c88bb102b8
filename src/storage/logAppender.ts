/**
 * messages.jsonl open for appending (messageLog.ts says what its lines are): one line per
 * entry, each append one write. Writes and syncs go through the store's DiskIO (off the
 * event loop on a disk), one at a time in the order asked: a line is in the file, in order,
 * before its append resolves.
 */
import { closeSync, fstatSync, openSync } from 'node:fs';
import { storageError } from '../errors/storageError.js';
import { FILE_MODE } from './atomicWrite.js';
import type { DiskIO, WriteError } from './diskIO.js';
import type { NewEntry } from './messageLog.js';

export class LogAppender {
  private fd: number;
  private size: number;
  private next: number;
  private needsNewline: boolean;
  /** Written since the last fdatasync: sync() has something to make durable. */
  private unsynced = false;
  /** The write or sync in progress: the next starts when it ends. */
  private tail: Promise<unknown> = Promise.resolve();
  /** fdatasync calls so far (the bench counts them per turn). */
  syncs = 0;

  constructor(
    readonly path: string,
    lastSeq: number,
    tornTail: boolean,
    private readonly io: DiskIO,
    private readonly now: () => number = Date.now,
    private readonly redact: (line: string) => string = (line) => line,
  ) {
    this.fd = openSync(path, 'a', FILE_MODE);
    this.size = fstatSync(this.fd).size;
    this.next = lastSeq + 1;
    // A torn last line stays where it is (we never rewrite); the next entry starts on a fresh line.
    this.needsNewline = tornTail;
  }

  /**
   * Append `entry` after the appends before it, stamped with the next seq; `sync` makes it
   * (and everything before it) durable before this resolves. `check` is given the seq the
   * entry would get, when its turn comes, and may refuse it by throwing (nothing written).
   */
  append<E extends NewEntry>(
    entry: E,
    options: { sync: boolean; check?: (seq: number) => void },
  ): Promise<E & { seq: number; ts: number }> {
    return this.appendAll([entry], options).then((written) => written[0]!);
  }

  /**
   * Append `entries` in order as one write (and one sync when `sync` says so): what append
   * does for each, at the cost of one. All or none: a failure takes out what went in.
   */
  appendAll<E extends NewEntry>(
    entries: readonly E[],
    options: { sync: boolean; check?: (seq: number) => void },
  ): Promise<(E & { seq: number; ts: number })[]> {
    return this.serial(async () => {
      options.check?.(this.next);
      const ts = this.now();
      const full = entries.map((entry, i) => ({ seq: this.next + i, ts, ...entry }) as E & { seq: number; ts: number });
      let text = this.needsNewline ? '\n' : '';
      for (const entry of full) text += `${JSON.stringify(entry)}\n`;
      const bytes = Buffer.from(this.redact(text));
      try {
        await this.io.write(this.fd, bytes, options.sync ? { sync: 'data' } : {});
      } catch (error) {
        if ((error as WriteError).written) await this.undoPartialWrite();
        throw storageError(error, 'messages.jsonl');
      }
      if (options.sync) this.syncs++;
      this.unsynced = !options.sync;
      this.size += bytes.length;
      this.needsNewline = false;
      this.next += full.length;
      return full;
    });
  }

  /** The seq the next append gets (once the appends in progress are done). */
  get nextSeq(): number {
    return this.next;
  }

  /** Make everything appended so far durable; nothing to do when the last append was synced already. */
  sync(): Promise<void> {
    return this.serial(async () => {
      if (!this.unsynced) return;
      await this.io.sync(this.fd, 'data');
      this.syncs++;
      this.unsynced = false;
    });
  }

  /** Close once the writes in progress are done. */
  async close(): Promise<void> {
    await this.tail.catch(() => {});
    closeSync(this.fd);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.catch(() => {}).then(work);
    this.tail = run;
    return run;
  }

  /** A failed append (disk full) or its failed sync: the line is taken out, so that no later append extends half a line. */
  private async undoPartialWrite(): Promise<void> {
    try {
      await this.io.truncate(this.fd, this.size);
    } catch {
      this.needsNewline = true;
    }
  }
}
