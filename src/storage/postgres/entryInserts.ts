/**
 * Appends of many sessions, shared over the pool. An append goes at once while a connection
 * is free; while every one is busy, the appends that arrive wait together and go in one
 * statement when the next is free, so that no session's append waits behind another's for
 * longer than one statement, and a busy store commits (and the server flushes its WAL) once
 * for many sessions. Each row is fenced by its session's lease token and inserted only
 * where its run starts at the session's next seq, as a single append is (postgresSessionStorage.ts);
 * the caller learns which went in and finds out itself why one did not.
 */
import type { QueryResultRow } from 'pg';

/** What the inserts need of the database (database.ts, which owns them): its schema's name, its queries. */
interface Queries {
  readonly s: string;
  query<R extends QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
}

/** One session's entries, consecutive from `seqs[0]`. */
export interface EntryRun {
  sessionId: string;
  token: string;
  seqs: number[];
  bodies: string[];
}

interface Waiting {
  run: EntryRun;
  resolve(inserted: boolean): void;
  reject(error: unknown): void;
}

/** Runs of one statement at most: a few MB of parameters. */
const PER_STATEMENT = 256;

export class EntryInserts {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly db: Queries,
    /** Statements in flight at most: the pool's connections. */
    private readonly connections: number,
  ) {}

  /** Whether the run went in (false: the lease or the seq refused it; nothing of it was written). */
  insert(run: EntryRun): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ run, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.waiting.length && this.inFlight < this.connections) {
      const batch = this.waiting.splice(0, PER_STATEMENT);
      this.inFlight++;
      this.send(batch)
        .finally(() => {
          this.inFlight--;
          this.next();
        })
        .catch(() => {});
    }
  }

  private async send(batch: Waiting[]): Promise<void> {
    const ids: string[] = [];
    const tokens: string[] = [];
    const seqs: number[] = [];
    const firsts: number[] = [];
    const bodies: string[] = [];
    for (const { run } of batch)
      run.seqs.forEach((seq, i) => {
        ids.push(run.sessionId);
        tokens.push(run.token);
        seqs.push(seq);
        firsts.push(run.seqs[0]!);
        bodies.push(run.bodies[i]!);
      });
    const { s } = this.db;
    let rows: { session_id: string }[];
    try {
      rows = await this.db.query<{ session_id: string }>(
        `WITH input AS (
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[]) AS i(session_id, token, seq, first, body)
         ), fence AS (
           SELECT l.session_id FROM ${s}.leases l JOIN (SELECT DISTINCT session_id, token FROM input) t
             ON l.session_id = t.session_id AND l.token = t.token FOR SHARE OF l
         )
         INSERT INTO ${s}.entries (session_id, seq, body)
         SELECT i.session_id, i.seq, i.body FROM input i JOIN fence f ON f.session_id = i.session_id
         WHERE i.first = (SELECT coalesce(max(e.seq), 0) + 1 FROM ${s}.entries e WHERE e.session_id = i.session_id)
         ON CONFLICT DO NOTHING RETURNING session_id`,
        [ids, tokens, seqs, firsts, bodies],
      );
    } catch (error) {
      for (const w of batch) w.reject(error);
      return;
    }
    const inserted = new Set(rows.map((r) => r.session_id));
    for (const w of batch) w.resolve(inserted.has(w.run.sessionId));
  }
}
