/**
 * trace.jsonl beside the session: the file opened on the first write (a session traced
 * with the trace off has none), appended without fsync (a trace is diagnostic; the log is
 * the record), through DiskIO: lines queued while a write is in progress go out together
 * in the next. A write that fails (a full disk) drops its lines and never stops the session.
 */
import { closeSync, openSync } from 'node:fs';
import { FILE_MODE } from './atomicWrite.js';
import type { DiskIO } from './diskIO.js';
import type { TraceWriter } from './sessionStore.js';

export class FileTraceWriter implements TraceWriter {
  private fd: number | null = null;
  private closed = false;
  private queued: string[] = [];
  private writing: Promise<void> | null = null;
  dropped = 0;

  constructor(
    private readonly path: string,
    private readonly io: DiskIO,
  ) {}

  write(lines: readonly string[]): void {
    if (lines.length === 0) return;
    if (this.closed) {
      this.dropped += lines.length;
      return;
    }
    for (const line of lines) this.queued.push(line);
    this.writing ??= this.drain();
  }

  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Write what is queued, then close the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queued.length) {
        const lines = this.taken();
        try {
          this.fd ??= openSync(this.path, 'a', FILE_MODE);
          await this.io.write(this.fd, Buffer.from(lines.join('')));
        } catch {
          this.dropped += lines.length;
        }
      }
    } finally {
      this.writing = null;
    }
  }

  /** The queued lines of the next write: up to WRITE_CHARS of them (at least one), so that no one copy holds the loop long. */
  private taken(): string[] {
    let chars = 0;
    let n = 0;
    while (n < this.queued.length && (n === 0 || chars < WRITE_CHARS)) chars += this.queued[n++]!.length;
    return n === this.queued.length ? this.queued.splice(0) : this.queued.splice(0, n);
  }
}

/** Characters of trace lines per write. */
const WRITE_CHARS = 256 * 1024;
