/**
 * The PostgreSQL session store (issue 15): sessions of many instances in one database,
 * one writer per session by a lease with a fencing token (postgresLease.ts). Tables are
 * made and migrated by the store (schema.ts); `pg` is loaded on first use only.
 *
 *   createSession({ llm, store: postgresStore({ connectionString: process.env.DATABASE_URL }) })
 */
import type { CreateSessionOptions, OpenOptions, SessionStore, SessionSummary } from '../sessionStore.js';
import { SESSION_ID } from '../sessionPaths.js';
import { SessionNotFoundError } from '../storeErrors.js';
import { Database, type ConnectionOptions } from './database.js';
import { holderName, inUse, PostgresLease, takeLease, type LeaseTiming } from './postgresLease.js';
import { LAYOUT } from './postgresMemoryFiles.js';
import { PostgresSessionReader } from './postgresSessionReader.js';
import { PostgresSessionStorage } from './postgresSessionStorage.js';
import { postgresStateStore } from './postgresStateStore.js';
import type { StateStore } from '../stateStore.js';

export interface PostgresStoreOptions extends ConnectionOptions, Partial<LeaseTiming> {}

export function postgresStore(options: PostgresStoreOptions): SessionStore {
  return new PostgresStore(options);
}

const DEFAULT_LEASE_MS = 30_000;

class PostgresStore implements SessionStore {
  private readonly db: Database;
  private readonly timing: LeaseTiming;
  /** This instance, as its leases name it. */
  private readonly holder = holderName();

  constructor(options: PostgresStoreOptions) {
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!(Number.isFinite(leaseMs) && leaseMs > 0)) throw new TypeError(`postgresStore: leaseMs must be a positive number, got ${leaseMs}`);
    // A write paused for longer than a lease is ended by the server, so it cannot hold off a takeover.
    this.db = new Database(options, leaseMs);
    this.timing = { leaseMs, renewMs: options.renewMs ?? Math.floor(leaseMs / 3) };
  }

  get location(): string {
    return this.db.location;
  }

  async create(options: CreateSessionOptions): Promise<PostgresSessionStorage> {
    const { meta } = options;
    const redact = options.redact ?? ((text: string) => text);
    if (!SESSION_ID.test(meta.id)) throw new TypeError(`${JSON.stringify(meta.id)} is not a session id (a lowercase UUID)`);
    const { s } = this.db;
    const token = await this.db.transaction(async (client) => {
      const made = await client.query(
        `INSERT INTO ${s}.sessions (id, cwd, created_at, name, meta) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
        [meta.id, meta.cwd, meta.createdAt, meta.name === null ? null : redact(meta.name), redact(`${JSON.stringify(meta, null, 2)}\n`)],
      );
      if (!made.rowCount) throw new Error(`session ${meta.id} exists already`);
      await client.query(
        `INSERT INTO ${s}.leases (session_id, holder, token, expires_at) VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond')`,
        [meta.id, this.holder, this.timing.leaseMs],
      );
      for (const folder of LAYOUT) {
        await client.query(`INSERT INTO ${s}.memory_files (session_id, path, parent, kind) VALUES ($1, $2, '', 'folder')`, [
          meta.id,
          folder,
        ]);
      }
      return '1';
    });
    return this.storage(meta.id, meta.cwd, token, 0, options);
  }

  async open(id: string, options: OpenOptions = {}): Promise<PostgresSessionStorage> {
    if (typeof id !== 'string' || !SESSION_ID.test(id)) throw new SessionNotFoundError(`no session with id ${id} in ${this.location}`);
    const taken = await takeLease(this.db, id, this.holder, this.timing.leaseMs);
    return this.storage(id, taken.cwd, taken.token, taken.lastSeq, options);
  }

  async read(id: string): Promise<PostgresSessionReader> {
    if (typeof id !== 'string' || !SESSION_ID.test(id)) throw new SessionNotFoundError(`no session with id ${id} in ${this.location}`);
    const rows = await this.db.query<Row>(`SELECT id, cwd, created_at, name FROM ${this.db.s}.sessions WHERE id = $1`, [id]);
    if (!rows[0]) throw new SessionNotFoundError(`no session with id ${id} in ${this.location}`);
    return new PostgresSessionReader(this.db, id, this.summaryOf(rows[0]).location);
  }

  async list(options: { cwd?: string } = {}): Promise<SessionSummary[]> {
    const rows = await this.db.query<Row>(
      `SELECT id, cwd, created_at, name FROM ${this.db.s}.sessions WHERE $1::text IS NULL OR cwd = $1 ORDER BY created_at DESC, id`,
      [options.cwd ?? null],
    );
    return rows.map((row) => this.summaryOf(row));
  }

  async find(idOrPrefix: string): Promise<SessionSummary> {
    if (typeof idOrPrefix !== 'string' || !/^[0-9a-f-]{4,36}$/i.test(idOrPrefix)) {
      throw new SessionNotFoundError(`${JSON.stringify(idOrPrefix)} is not a session id (a UUID, or at least its first 4 characters)`);
    }
    const prefix = idOrPrefix.toLowerCase();
    // The prefix holds only hex digits and dashes: nothing LIKE would read as a wildcard.
    const rows = await this.db.query<Row>(
      `SELECT id, cwd, created_at, name FROM ${this.db.s}.sessions WHERE id LIKE $1 || '%' ORDER BY id LIMIT 2`,
      [prefix],
    );
    const exact = rows.find((row) => row.id === prefix);
    if (exact) return this.summaryOf(exact);
    if (rows.length > 1) throw new SessionNotFoundError(`session id ${idOrPrefix} is ambiguous: more than one session starts with it`);
    if (!rows[0]) throw new SessionNotFoundError(`no session with id ${idOrPrefix} in ${this.location}`);
    return this.summaryOf(rows[0]);
  }

  async remove(id: string): Promise<void> {
    if (typeof id !== 'string' || !SESSION_ID.test(id)) throw new SessionNotFoundError(`no session with id ${id} in ${this.location}`);
    const { s } = this.db;
    await this.db.transaction(async (client) => {
      // The lease's row locked: no one takes the session while it goes.
      const { rows } = await client.query<{ holder: string; until: number; held: boolean }>(
        `SELECT holder, (extract(epoch FROM expires_at) * 1000)::float8 AS until, expires_at > clock_timestamp() AS held
         FROM ${s}.leases WHERE session_id = $1 FOR UPDATE`,
        [id],
      );
      if (!rows[0]) throw new SessionNotFoundError(`no session with id ${id} in ${this.location}`);
      if (rows[0].held) throw inUse(id, rows[0].holder, Math.round(rows[0].until));
      await client.query(`DELETE FROM ${s}.sessions WHERE id = $1`, [id]);
    });
  }

  state(): StateStore {
    return postgresStateStore(this.db);
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  private storage(id: string, cwd: string, token: string, lastSeq: number, options: OpenOptions): PostgresSessionStorage {
    const lease = new PostgresLease(this.db, id, token, this.holder, this.timing);
    return new PostgresSessionStorage(this.db, id, cwd, lease, lastSeq, options.redact ?? ((text) => text), options.now ?? Date.now);
  }

  private summaryOf(row: Row): SessionSummary {
    return {
      id: row.id,
      location: `${this.location}#${row.cwd}/${row.id}`,
      cwd: row.cwd,
      createdAt: Number(row.created_at),
      name: row.name,
    };
  }
}

interface Row {
  id: string;
  cwd: string;
  created_at: string;
  name: string | null;
}
