/**
 * A session's trace as rows of `trace` (session_id, seq, record). Records queue in memory
 * and go in batches, one statement each, one batch in flight at a time (so in order); the
 * statement is fenced by the lease's token and numbers its rows after the last one stored,
 * so a session resumed elsewhere continues its trace. Nothing waits for it but close():
 * a failed batch is dropped and counted, never retried at a turn's expense (the log is the
 * record), and a queue grown past MAX_QUEUED (the server slower than the session) drops
 * what does not fit.
 */
import type { TraceWriter } from '../sessionStore.js';
import type { Database } from './database.js';
import { fence } from './postgresLease.js';

const MAX_BATCH = 1_000;
const MAX_QUEUED = 20_000;

export class PostgresTraceWriter implements TraceWriter {
  private queued: string[] = [];
  private draining: Promise<void> | null = null;
  /** The lease was lost: a newer holder writes this session's trace now. */
  private fenced = false;
  dropped = 0;

  constructor(
    private readonly db: Database,
    private readonly sessionId: string,
    private readonly token: string,
  ) {}

  write(lines: readonly string[]): void {
    if (this.fenced) {
      this.dropped += lines.length;
      return;
    }
    const room = MAX_QUEUED - this.queued.length;
    for (const line of room >= lines.length ? lines : lines.slice(0, Math.max(0, room))) {
      this.queued.push(line.endsWith('\n') ? line.slice(0, -1) : line);
    }
    this.dropped += Math.max(0, lines.length - Math.max(0, room));
    if (this.queued.length) this.draining ??= this.drain();
  }

  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    const { s } = this.db;
    while (this.queued.length && !this.fenced) {
      const batch = this.queued.splice(0, MAX_BATCH);
      try {
        const rows = await this.db.query(
          `WITH ${fence(s)}
           INSERT INTO ${s}.trace (session_id, seq, record)
           SELECT $1, (SELECT coalesce(max(seq), 0) FROM ${s}.trace WHERE session_id = $1) + t.ord, t.record
           FROM fence, unnest($3::text[]) WITH ORDINALITY AS t(record, ord)
           RETURNING 1`,
          [this.sessionId, this.token, batch],
        );
        if (rows.length === 0) this.fenced = true;
        if (rows.length < batch.length) this.dropped += batch.length - rows.length;
      } catch {
        this.dropped += batch.length; // the server unreachable or restarting: these records are lost, the next batch tries again
      }
    }
    this.dropped += this.queued.length;
    this.queued = [];
    this.draining = null;
  }
}
