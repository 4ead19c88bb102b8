/**
 * The connection to PostgreSQL: a pg Pool made on first use (`pg` is imported only
 * then, so a process that never uses this store never loads it), the store's schema
 * migrated once per instance, and errors of reaching the server named by a location
 * that never carries a password.
 */
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { EntryInserts } from './entryInserts.js';
import { migrate, quoteIdent } from './schema.js';

export interface ConnectionOptions {
  /** `postgres://user:password@host:port/database`; the password is never shown. */
  connectionString?: string;
  /** A pool of the host's own, used as it is and not ended by close(). */
  pool?: Pool;
  /** The schema holding workmem's tables (default `workmem`); made if missing. */
  schema?: string;
  /** How long to wait for a connection (default 10 s). */
  connectTimeoutMs?: number;
  /** Connections of the pool made here (default 10). */
  maxConnections?: number;
}

export class Database {
  /** The schema, quoted, to prefix table names with. */
  readonly s: string;
  /** Where the server is: `postgres://host:port/database`, never the user or password. */
  readonly location: string;
  private pool: Pool | null;
  private ready: Promise<Pool> | null = null;
  private readonly secret: string | null;
  /** Appends of the store's sessions, shared over the pool's connections. */
  readonly inserts: EntryInserts;

  /**
   * `idleInTransactionMs`: how long the server lets one of our transactions wait for its
   * next statement before ending it (0: no limit). A holder paused inside a fenced write
   * (SIGSTOP, a frozen VM) holds a share lock on its lease row, and a takeover would wait
   * on it for as long as the pause lasts; ended, the write is rolled back and the takeover goes on.
   */
  constructor(
    private readonly options: ConnectionOptions,
    private readonly idleInTransactionMs = 0,
  ) {
    if (!options || (typeof options.connectionString !== 'string' && !options.pool)) {
      throw new TypeError('postgresStore needs a connectionString or a pool');
    }
    const schema = options.schema ?? 'workmem';
    this.s = quoteIdent(schema);
    this.pool = options.pool ?? null;
    const where = describeServer(options);
    this.secret = where.password;
    this.location = schema === 'workmem' ? where.location : `${where.location}?schema=${schema}`;
    const given = (options.pool as { options?: { max?: unknown } } | undefined)?.options?.max;
    this.inserts = new EntryInserts(this, typeof given === 'number' ? given : (options.maxConnections ?? 10));
  }

  async query<R extends QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    const pool = await this.connected();
    try {
      return (await pool.query<R>(sql, params)).rows;
    } catch (error) {
      throw this.named(error);
    }
  }

  /** Run `work` in one transaction: committed when it returns, rolled back when it throws. */
  async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const pool = await this.connected();
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw this.named(error);
    }
    // A connection the server ends between our statements (a restart, the idle limit
    // below) emits 'error' on the client we hold: unheard, it would crash the host.
    let broken: Error | undefined;
    const onError = (error: Error): void => void (broken ??= error);
    client.on('error', onError);
    try {
      // One round trip: the limit holds for this transaction only (SET LOCAL).
      const ms = Math.ceil(this.idleInTransactionMs);
      await client.query(ms > 0 ? `BEGIN; SET LOCAL idle_in_transaction_session_timeout = ${ms}` : 'BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((failed: Error) => void (broken ??= failed));
      throw this.named(error);
    } finally {
      client.removeListener('error', onError);
      // Given the error, the pool drops the connection instead of handing it out again.
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    const ready = this.ready;
    this.ready = null;
    if (!this.options.pool && ready) await (await ready.catch(() => null))?.end();
  }

  private connected(): Promise<Pool> {
    this.ready ??= this.connect();
    const ready = this.ready;
    // A failed first connection is not kept: the next call tries again.
    ready.catch(() => {
      if (this.ready === ready) this.ready = null;
    });
    return ready;
  }

  private async connect(): Promise<Pool> {
    let pool = this.pool;
    if (!pool) {
      const { default: pg } = await import('pg');
      pool = new pg.Pool({
        connectionString: this.options.connectionString,
        connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
        max: this.options.maxConnections ?? 10,
      });
      pool.on('error', () => {}); // an idle connection dropped by the server: the next query makes a new one
    }
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      if (!this.options.pool) await pool.end().catch(() => {});
      throw this.named(error);
    }
    try {
      await migrate(client, this.s.slice(1, -1));
    } catch (error) {
      client.release();
      if (!this.options.pool) await pool.end().catch(() => {});
      throw this.named(error);
    }
    client.release();
    return pool;
  }

  /** An error that says which server, with any password taken out. */
  private named(error: unknown): Error {
    if (!(error instanceof Error) || isOurs(error)) return error as Error;
    let message = error.message || String((error as { code?: string }).code ?? 'unknown error');
    if (this.secret) message = message.split(this.secret).join('[redacted]');
    const named = new Error(`PostgreSQL at ${this.location}: ${message}`, { cause: error });
    (named as Error & { code?: unknown }).code = (error as { code?: unknown }).code;
    return named;
  }
}

/** Errors the store throws itself pass through as they are. */
function isOurs(error: Error): boolean {
  // pg's own are 'Error' (reaching the server) and 'error' (what the server said).
  return (error.name !== 'Error' && error.name !== 'error') || error.message.startsWith('PostgreSQL at ');
}

function describeServer(options: ConnectionOptions): { location: string; password: string | null } {
  if (options.connectionString !== undefined) {
    const described = describeUrl(options.connectionString);
    if (!described) throw new TypeError('postgresStore: the connectionString is not a postgres:// URL');
    return described;
  }
  const pool = options.pool as unknown as { options?: { connectionString?: string; host?: string; port?: number; database?: string } };
  const o = pool.options ?? {};
  // A host's pool made from a connection string names its server there, not in host/port.
  const described = typeof o.connectionString === 'string' ? describeUrl(o.connectionString) : null;
  if (described) return described;
  return { location: `postgres://${o.host ?? 'localhost'}${o.port ? `:${o.port}` : ''}/${o.database ?? ''}`, password: null };
}

function describeUrl(connectionString: string): { location: string; password: string | null } | null {
  try {
    const url = new URL(connectionString);
    const password = url.password ? decodeURIComponent(url.password) : null;
    return { location: `postgres://${url.host || 'localhost'}${url.pathname || '/'}`, password };
  } catch {
    return null;
  }
}
