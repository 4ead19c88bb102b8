/**
 * The stores the behaviour suite runs on (issue 15: one suite, parameterised by store):
 * the filesystem store always, PostgreSQL when test/storage/postgresServer.ts finds a
 * server (otherwise the run says once that the Postgres tests are skipped).
 *
 *   describe.each(storesUnderTest('resume'))('$name store', (where) => {
 *     it('…', async () => { const session = await newSession({ llm, ...where.fresh() }); … });
 *   });
 *
 * `fresh()` gives a new home and, on Postgres, a store in a schema of its own, closed and
 * dropped after the test; pass both to createSession and openSession. What a test reads
 * of a session (its log, its working-memory files) goes through the storage port
 * (logOf, memoryFileOf), never by path, so the same body checks both stores.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach } from 'vitest';
import type { Session } from '../../src/session/index.js';
import type { LogEntry } from '../../src/storage/messageLog.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { tempHome } from '../helpers.js';
import { usePostgres } from './postgresServer.js';

/** Where a test's sessions are kept: spread into createSession / openSession options. */
export interface Where {
  home: string;
  /** Absent for the filesystem store: the default, under `home`, exactly as an embedder gets it. */
  store?: SessionStore;
}

export interface StoreUnderTest {
  name: 'file' | 'postgres';
  /** A new home (and a new Postgres schema), cleaned up after the test. */
  fresh(): Where;
  /**
   * The same sessions as another instance of a service sees them: the same store with a
   * home of its own — for files the home is the store, so the same home (a shared volume).
   */
  elsewhere(where: Where): Where;
}

/**
 * The stores to run `what` on. Call it at the top level of a test file: it starts the
 * file's PostgreSQL before its tests and stops it after them.
 */
export function storesUnderTest(what: string): StoreUnderTest[] {
  const postgres = usePostgres(`${what} behaviour`);
  const opened: { store: SessionStore; schema: string }[] = [];
  afterEach(async () => {
    const done = opened.splice(0);
    await Promise.all(done.map(({ store }) => store.close()));
    if (done.length)
      await dropSchemas(
        postgres.server().url,
        done.map((d) => d.schema),
      );
  });
  const file: StoreUnderTest = { name: 'file', fresh: () => ({ home: tempHome() }), elsewhere: (where) => where };
  if (!postgres.available) return [file];
  return [
    file,
    {
      name: 'postgres',
      fresh: () => {
        const schema = `workmem_t_${randomBytes(6).toString('hex')}`;
        const store = postgresStore({ connectionString: postgres.server().url, schema });
        opened.push({ store, schema });
        return { home: tempHome(), store };
      },
      elsewhere: (where) => ({ ...where, home: tempHome() }),
    },
  ];
}

async function dropSchemas(url: string, schemas: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** The session's log as its store reads it back (messages.jsonl for files, rows of `entries` on Postgres). */
export async function logOf(session: Session): Promise<LogEntry[]> {
  const read = await session.record.storage.log.read();
  if (read.damage.length) throw new Error(`the log of ${session.id} has damaged lines: ${JSON.stringify(read.damage)}`);
  return read.entries;
}

/** A working-memory file of the session, through its store; `path` as compaction names it (working-memory/…). */
export function memoryFileOf(session: Session, path: string): Promise<string> {
  return session.record.storage.memory.read(path, { maxBytes: 64 * 1024 * 1024 });
}
