/**
 * One session open in Postgres under its lease: the log as rows of `entries` (one
 * statement per append: fenced by the lease's token, gap-free by the expected seq, the
 * primary key refusing a second row with the same seq), the meta and the damage report as
 * columns of `sessions`, the memory files as rows of `memory_files`.
 */
import { checkEntry, type Damage, type LogEntry, type NewEntry } from '../messageLog.js';
import { firstLine, SessionMetaSchema, type SessionMeta } from '../sessionMeta.js';
import type { DamageReport, LogRead, MetaRead, Redact, SessionLog, SessionStorage } from '../sessionStore.js';
import { SequenceConflictError } from '../storeErrors.js';
import type { Database } from './database.js';
import { fence, leaseLost, type PostgresLease } from './postgresLease.js';
import { PostgresMemoryFiles } from './postgresMemoryFiles.js';

export class PostgresSessionStorage implements SessionStorage {
  readonly log: PostgresSessionLog;
  readonly memory: PostgresMemoryFiles;
  readonly openNotes: readonly string[] = [];
  private closed = false;

  constructor(
    private readonly db: Database,
    readonly id: string,
    /** The working directory the session belongs to, as created. */
    readonly cwd: string,
    readonly lease: PostgresLease,
    lastSeq: number,
    private readonly redact: Redact,
    now: () => number,
  ) {
    this.memory = new PostgresMemoryFiles(db, id, lease.token, `${this.location}/working-memory`);
    this.log = new PostgresSessionLog(db, id, lease.token, lastSeq + 1, redact, now);
  }

  /** `postgres://host:port/database#<cwd>/<id>`: the server, then the session as the filesystem would name it. */
  get location(): string {
    return `${this.db.location}#${this.cwd}/${this.id}`;
  }

  async readMeta(): Promise<MetaRead> {
    const rows = await this.db.query<{ meta: string }>(`SELECT meta FROM ${this.db.s}.sessions WHERE id = $1`, [this.id]);
    try {
      return { ok: true, meta: SessionMetaSchema.parse(JSON.parse(rows[0]?.meta ?? 'null')) };
    } catch (error) {
      return { ok: false, problem: `the meta is unreadable (${firstLine(error)}); rebuilt from the log` };
    }
  }

  async writeMeta(meta: SessionMeta): Promise<void> {
    const name = meta.name === null ? null : this.redact(meta.name);
    await this.fencedUpdate('meta = $3, name = $4', [this.redact(`${JSON.stringify(meta, null, 2)}\n`), name]);
  }

  async writeDamage(report: DamageReport): Promise<void> {
    const body = { checkedAt: report.checkedAt, lines: report.lines, ...(report.repairs.length ? { repairs: report.repairs } : {}) };
    await this.fencedUpdate('damage = $3', [this.redact(JSON.stringify(body))]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.lease.release();
  }

  private async fencedUpdate(set: string, values: unknown[]): Promise<void> {
    const { s } = this.db;
    const rows = await this.db.query(
      `WITH ${fence(s)} UPDATE ${s}.sessions SET ${set} WHERE id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING id`,
      [this.id, this.lease.token, ...values],
    );
    if (!rows.length) throw await leaseLost(this.db, s, this.id, this.lease.token);
  }
}

class PostgresSessionLog implements SessionLog {
  /** An append that failed without an answer: it may be in the table (see settle). */
  private unsure: { seq: number; body: string } | null = null;

  constructor(
    private readonly db: Database,
    private readonly id: string,
    private readonly token: string,
    private next: number,
    private readonly redact: Redact,
    private readonly now: () => number,
  ) {}

  get nextSeq(): number {
    return this.next;
  }

  async read(): Promise<LogRead> {
    const rows = await this.db.query<{ seq: string; body: string }>(
      `SELECT seq, body FROM ${this.db.s}.entries WHERE session_id = $1 ORDER BY seq`,
      [this.id],
    );
    const entries: LogEntry[] = [];
    const damage: Damage[] = [];
    for (const row of rows) {
      let value: unknown;
      let reason: string | null;
      try {
        value = JSON.parse(row.body);
        reason = checkEntry(value);
      } catch (error) {
        reason = `not JSON: ${(error as Error).message}`;
      }
      // A damaged row is named by its seq (line) and reported, never rewritten.
      if (reason) damage.push({ line: Number(row.seq), offset: 0, reason, raw: row.body });
      else entries.push(value as LogEntry);
    }
    return { entries, damage };
  }

  /** One statement: written only while our token holds and `expectedSeq` is next; `sync` is moot (each commit is durable). */
  async append<E extends NewEntry>(entry: E, options: { expectedSeq: number; sync: boolean }): Promise<E & { seq: number; ts: number }> {
    let expected = options.expectedSeq;
    if (this.unsure) {
      // An earlier append that failed without an answer is settled first (or this one fails too).
      const { seq } = this.unsure;
      // In the table after all: the caller, which counted without it, meant the seq after it.
      if ((await this.settle(this.unsure)) && expected === seq) expected = this.next;
    }
    if (expected !== this.next) throw new SequenceConflictError(this.id, expected, this.next);
    const full = { seq: this.next, ts: this.now(), ...entry } as E & { seq: number; ts: number };
    const { s } = this.db;
    const body = this.redact(JSON.stringify(full));
    let rows: unknown[];
    try {
      rows = await this.db.query(
        `WITH ${fence(s)}
         INSERT INTO ${s}.entries (session_id, seq, body)
         SELECT $1, $3, $4 FROM fence WHERE $3 = (SELECT coalesce(max(seq), 0) + 1 FROM ${s}.entries WHERE session_id = $1)
         ON CONFLICT DO NOTHING RETURNING seq`,
        [this.id, this.token, full.seq, body],
      );
    } catch (error) {
      // The statement may have committed and only its answer been lost (the connection
      // cut after it): the row is looked for, now or before the next append.
      this.unsure = { seq: full.seq, body };
      if (await this.settle(this.unsure).catch(() => false)) return full;
      throw error;
    }
    if (!rows.length) {
      const now = await this.db.query<{ token: string | null; next: string }>(
        `SELECT (SELECT token FROM ${s}.leases WHERE session_id = $1) AS token,
                (SELECT coalesce(max(seq), 0) + 1 FROM ${s}.entries WHERE session_id = $1) AS next`,
        [this.id],
      );
      if (now[0]?.token !== this.token) throw await leaseLost(this.db, s, this.id, this.token);
      throw new SequenceConflictError(this.id, expected, Number(now[0]!.next));
    }
    this.next++;
    return full;
  }

  async sync(): Promise<void> {
    /* every append was committed before it resolved */
  }

  /**
   * Whether an append whose answer was lost is in the table: if so it counts as written
   * (the next seq moves past it), if not it never was; either way it is settled. Throws
   * while the server cannot be asked, and the append that called it fails.
   */
  private async settle(unsure: { seq: number; body: string }): Promise<boolean> {
    const rows = await this.db.query<{ body: string }>(`SELECT body FROM ${this.db.s}.entries WHERE session_id = $1 AND seq = $2`, [
      this.id,
      unsure.seq,
    ]);
    this.unsure = null;
    const landed = rows[0]?.body === unsure.body;
    if (landed && this.next === unsure.seq) this.next++;
    return landed;
  }
}
