/**
 * One session open in Postgres under its lease: the log as rows of `entries` (appends of
 * the store's sessions shared over its pool, entryInserts.ts: fenced by the lease's token,
 * gap-free by the expected seq, the primary key refusing a second row with the same seq), the meta and the damage report as
 * columns of `sessions`, the memory files as rows of `memory_files`, the trace as rows of
 * `trace` (postgresTraceWriter.ts).
 */
import { checkEntry, type Damage, type LogEntry, type NewEntry } from '../messageLog.js';
import { firstLine, SessionMetaSchema, type SessionMeta } from '../sessionMeta.js';
import type { PoolClient } from 'pg';
import type { DamageReport, LogRead, MemoryWrite, MetaRead, Redact, SessionLog, SessionStorage } from '../sessionStore.js';
import { LeaseLostError, SequenceConflictError } from '../storeErrors.js';
import { PathRefusedError } from '../sandboxPath.js';
import type { Database } from './database.js';
import { fence, holdFence, leaseLost, type PostgresLease } from './postgresLease.js';
import { PostgresMemoryFiles } from './postgresMemoryFiles.js';
import { PostgresTraceWriter } from './postgresTraceWriter.js';

export class PostgresSessionStorage implements SessionStorage {
  readonly log: PostgresSessionLog;
  readonly memory: PostgresMemoryFiles;
  readonly trace: PostgresTraceWriter;
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
    this.trace = new PostgresTraceWriter(db, id, lease.token);
  }

  /** `postgres://host:port/database#<cwd>/<id>`: the server, then the session as the filesystem would name it. */
  get location(): string {
    return `${this.db.location}#${this.cwd}/${this.id}`;
  }

  async readMeta(): Promise<MetaRead> {
    const read = await readMetaRow(this.db, this.id);
    return read.ok ? read : { ok: false, problem: `${read.problem}; rebuilt from the log` };
  }

  async writeMeta(meta: SessionMeta): Promise<void> {
    const name = meta.name === null ? null : this.redact(meta.name);
    await this.fencedUpdate('meta = $3, name = $4', [this.redact(`${JSON.stringify(meta, null, 2)}\n`), name]);
  }

  /** One transaction: the lease's row held, the files written, the entry inserted; all or nothing. */
  async commit<E extends NewEntry>(
    files: readonly MemoryWrite[],
    entry: E,
    options: { expectedSeq: number },
  ): Promise<E & { seq: number; ts: number }> {
    const { log, memory } = this;
    await log.expecting(options.expectedSeq);
    const full = log.stamp(entry);
    try {
      await this.db.transaction(async (client) => {
        await holdFence(client, this.db.s, this.id, this.lease.token);
        for (const file of files) await memory.writeIn(client, memory.relOf(file.path), file.content, file.append);
        await log.insertIn(client, full);
      });
    } catch (error) {
      // Refused inside the transaction: nothing was written. Cut off: it may have committed.
      if (!(error instanceof SequenceConflictError || error instanceof LeaseLostError || error instanceof PathRefusedError)) {
        if (await log.answerLost([full])) return full;
      }
      throw error;
    }
    log.advance();
    return full;
  }

  async writeDamage(report: DamageReport): Promise<void> {
    const body = { checkedAt: report.checkedAt, lines: report.lines, ...(report.repairs.length ? { repairs: report.repairs } : {}) };
    await this.fencedUpdate('damage = $3', [this.redact(JSON.stringify(body))]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.trace.flush(); // its writes are fenced: stored while the lease is still ours
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
  /** An append (a run of entries) that failed without an answer: it may be in the table (see settle). */
  private unsure: { seq: number; count: number; body: string } | null = null;

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

  read(): Promise<LogRead> {
    return readEntries(this.db, this.id);
  }

  append<E extends NewEntry>(entry: E, options: { expectedSeq: number; sync: boolean }): Promise<E & { seq: number; ts: number }> {
    return this.appendAll([entry], options).then((written) => written[0]!);
  }

  /**
   * One statement, shared with other sessions' appends of the moment (entryInserts.ts):
   * written only while our token holds and `expectedSeq` is next; `sync` is moot (each
   * commit is durable).
   */
  async appendAll<E extends NewEntry>(
    entries: readonly E[],
    options: { expectedSeq: number; sync: boolean },
  ): Promise<(E & { seq: number; ts: number })[]> {
    const expected = await this.expecting(options.expectedSeq);
    const full = entries.map((entry, i) => this.stamp(entry, i));
    const bodies = full.map((e) => this.redact(JSON.stringify(e)));
    let inserted: boolean;
    try {
      inserted = await this.db.inserts.insert({ sessionId: this.id, token: this.token, seqs: full.map((e) => e.seq), bodies });
    } catch (error) {
      if (await this.answerLost(full)) return full;
      throw error;
    }
    if (!inserted) {
      const { s } = this.db;
      const now = await this.db.query<{ token: string | null; next: string }>(
        `SELECT (SELECT token FROM ${s}.leases WHERE session_id = $1) AS token,
                (SELECT coalesce(max(seq), 0) + 1 FROM ${s}.entries WHERE session_id = $1) AS next`,
        [this.id],
      );
      if (now[0]?.token !== this.token) throw await leaseLost(this.db, s, this.id, this.token);
      throw new SequenceConflictError(this.id, expected, Number(now[0]!.next));
    }
    this.next += full.length;
    return full;
  }

  /**
   * The seq an append (or a commit) expecting `expectedSeq` may take: an earlier write that
   * failed without an answer is settled first (or this one fails too); if it was in the table
   * after all, a caller that counted without it meant the seq after it.
   */
  async expecting(expectedSeq: number): Promise<number> {
    let expected = expectedSeq;
    if (this.unsure) {
      const { seq } = this.unsure;
      if ((await this.settle(this.unsure)) && expected === seq) expected = this.next;
    }
    if (expected !== this.next) throw new SequenceConflictError(this.id, expected, this.next);
    return expected;
  }

  /**
   * A write of `full` failed: its statement (or transaction) may have committed and only its
   * answer been lost (the connection cut after it). True when it is in the table; otherwise it
   * is looked for again before the next append.
   */
  async answerLost(full: readonly { seq: number }[]): Promise<boolean> {
    this.unsure = { seq: full[0]!.seq, count: full.length, body: this.redact(JSON.stringify(full.at(-1))) };
    return this.settle(this.unsure).catch(() => false);
  }

  /**
   * Whether an append whose answer was lost is in the table: if so it counts as written
   * (the next seq moves past it), if not it never was; either way it is settled. Throws
   * while the server cannot be asked, and the append that called it fails.
   */
  private async settle(unsure: { seq: number; count: number; body: string }): Promise<boolean> {
    // A run goes in whole or not at all: its last entry says which.
    const rows = await this.db.query<{ body: string }>(`SELECT body FROM ${this.db.s}.entries WHERE session_id = $1 AND seq = $2`, [
      this.id,
      unsure.seq + unsure.count - 1,
    ]);
    this.unsure = null;
    const landed = rows[0]?.body === unsure.body;
    if (landed && this.next === unsure.seq) this.next += unsure.count;
    return landed;
  }

  async sync(): Promise<void> {
    /* every append was committed before it resolved */
  }

  /** The entry as the next append would write it (`ahead` places after it). */
  stamp<E extends NewEntry>(entry: E, ahead = 0): E & { seq: number; ts: number } {
    return { seq: this.next + ahead, ts: this.now(), ...entry } as E & { seq: number; ts: number };
  }

  /** Insert a stamped entry inside a transaction that holds the lease's row: refused (SequenceConflictError) unless it is next. */
  async insertIn(client: PoolClient, full: NewEntry & { seq: number }): Promise<void> {
    const { s } = this.db;
    const { rows } = await client.query<{ next: string }>(
      `SELECT coalesce(max(seq), 0) + 1 AS next FROM ${s}.entries WHERE session_id = $1`,
      [this.id],
    );
    const next = Number(rows[0]!.next);
    if (next !== full.seq) throw new SequenceConflictError(this.id, full.seq, next);
    await client.query(`INSERT INTO ${s}.entries (session_id, seq, body) VALUES ($1, $2, $3)`, [
      this.id,
      full.seq,
      this.redact(JSON.stringify(full)),
    ]);
  }

  /** After insertIn committed. */
  advance(): void {
    this.next++;
  }
}

/** A session's entries in seq order; a row that is not an entry is reported by its seq, never rewritten. */
export async function readEntries(db: Database, id: string): Promise<LogRead> {
  const rows = await db.query<{ seq: string; body: string }>(`SELECT seq, body FROM ${db.s}.entries WHERE session_id = $1 ORDER BY seq`, [
    id,
  ]);
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
    if (reason) damage.push({ line: Number(row.seq), offset: 0, reason, raw: row.body });
    else entries.push(value as LogEntry);
  }
  return { entries, damage };
}

/** The meta as stored in the session's row. */
export async function readMetaRow(db: Database, id: string): Promise<MetaRead> {
  const rows = await db.query<{ meta: string }>(`SELECT meta FROM ${db.s}.sessions WHERE id = $1`, [id]);
  try {
    return { ok: true, meta: SessionMetaSchema.parse(JSON.parse(rows[0]?.meta ?? 'null')) };
  } catch (error) {
    return { ok: false, problem: `the meta is unreadable (${firstLine(error)})` };
  }
}
