/**
 * The Postgres store's tables, created and migrated by the store itself: each migration
 * runs once, in order, recorded in `workmem_schema_version`. Instances starting together
 * take a transaction-scoped advisory lock, so exactly one migrates and the others find it
 * done. A database migrated by a newer workmem is refused rather than misread.
 */
import type { PoolClient } from 'pg';

/** Migration n (1-based) is MIGRATIONS[n - 1]; `s` is the quoted schema name. Never edit one that shipped: add the next. */
const MIGRATIONS: ((s: string) => string)[] = [
  (s) => `
    CREATE TABLE ${s}.sessions (
      id text PRIMARY KEY,
      cwd text NOT NULL,
      created_at bigint NOT NULL,
      name text,
      meta text NOT NULL,
      damage text
    );
    CREATE INDEX sessions_by_cwd ON ${s}.sessions (cwd, created_at DESC);
    -- The log: append-only, gap-free, one row per entry (its JSON as written, redacted).
    CREATE TABLE ${s}.entries (
      session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
      seq bigint NOT NULL CHECK (seq > 0),
      body text NOT NULL,
      PRIMARY KEY (session_id, seq)
    );
    -- working-memory/: files and folders, each with a version that grows at every change.
    CREATE TABLE ${s}.memory_files (
      session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
      path text NOT NULL,
      parent text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('file', 'folder')),
      content text,
      version bigint NOT NULL DEFAULT 1,
      PRIMARY KEY (session_id, path)
    );
    CREATE INDEX memory_files_by_parent ON ${s}.memory_files (session_id, parent);
    -- One writer per session: the token grows at every takeover and fences every write.
    CREATE TABLE ${s}.leases (
      session_id text PRIMARY KEY REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
      holder text NOT NULL,
      token bigint NOT NULL,
      expires_at timestamptz NOT NULL
    );`,
  (s) => `
    -- Key-value state (the session index, reminder trackers, item memory) for a host that keeps
    -- sessions here: values as JSON text, listed by key prefix.
    CREATE TABLE ${s}.state (
      key text PRIMARY KEY,
      value text NOT NULL
    );
    -- A session's trace (what the visualizer replays): one row per record, in order.
    CREATE TABLE ${s}.trace (
      session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      record text NOT NULL,
      PRIMARY KEY (session_id, seq)
    );`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** Bring `schema` to SCHEMA_VERSION on `client` (not in a transaction yet). */
export async function migrate(client: PoolClient, schema: string): Promise<void> {
  const s = quoteIdent(schema);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`workmem schema ${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.workmem_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.workmem_schema_version`);
    const current = rows[0]?.v ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new SchemaVersionError(
        `the workmem tables in schema ${schema} are at schema version ${current}, newer than this workmem knows (${SCHEMA_VERSION}): ` +
          'upgrade workmem, or use another schema',
      );
    }
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
      await client.query(MIGRATIONS[version - 1]!(s));
      await client.query(`INSERT INTO ${s}.workmem_schema_version (version) VALUES ($1)`, [version]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The tables are at a version this workmem does not know. */
export class SchemaVersionError extends Error {
  override name = 'SchemaVersionError';
}

/** A schema name we accept: a plain lowercase SQL identifier, so quoting never has to escape. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function quoteIdent(name: string): string {
  if (!SCHEMA_NAME.test(name)) throw new TypeError(`schema ${JSON.stringify(name)} is not a plain SQL name (lowercase letters, digits, _)`);
  return `"${name}"`;
}
