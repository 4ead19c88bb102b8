/**
 * trace.jsonl beside the session: the file opened on the first write (a session traced
 * with the trace off has none), appended without fsync (a trace is diagnostic; the log is
 * the record). A write that fails (a full disk) drops its lines and never stops the session.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { FILE_MODE } from './atomicWrite.js';
import type { TraceWriter } from './sessionStore.js';

export class FileTraceWriter implements TraceWriter {
  private fd: number | null = null;
  private closed = false;
  dropped = 0;

  constructor(private readonly path: string) {}

  write(lines: readonly string[]): void {
    if (lines.length === 0) return;
    if (this.closed) {
      this.dropped += lines.length;
      return;
    }
    try {
      this.fd ??= openSync(this.path, 'a', FILE_MODE);
      writeSync(this.fd, lines.join(''));
    } catch {
      this.dropped += lines.length;
    }
  }

  async flush(): Promise<void> {
    /* every write was made before write() returned */
  }

  close(): void {
    this.closed = true;
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
