/**
 * The trace of a session kept in Postgres (the `trace` table), against a real server: a
 * turn never waits for it nor fails on it (a trace is diagnostic; the log is the record),
 * it arrives in order, and it goes in batches, not a statement per record. Skipped, saying
 * so in one line, without PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { newSession, tempHome } from '../helpers.js';
import { usePostgres } from './postgresServer.js';

const { available, server: serverOf } = usePostgres('trace');

/** A schema of its own, a pool of our own (to count statements), and an admin client for the schema. */
async function withSchema(
  run: (ctx: { store: ReturnType<typeof postgresStore>; admin: pg.Client; schema: string; traceInserts: () => number }) => Promise<void>,
): Promise<void> {
  const schema = `workmem_tr_${randomBytes(6).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: serverOf().url, max: 4 });
  let inserts = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && /INSERT INTO \S+\.trace /.test(args[0])) inserts++;
    return query(...args);
  };
  const store = postgresStore({ pool, schema });
  const admin = new pg.Client({ connectionString: serverOf().url });
  await admin.connect();
  try {
    await store.list(); // the schema made
    await run({ store, admin, schema, traceInserts: () => inserts });
  } finally {
    await store.close();
    await pool.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

type Record = { k: string; event?: { type: string; text?: string } };
const turnEnds = (records: string[]) =>
  records.map((r) => JSON.parse(r) as Record).flatMap((r) => (r.event?.type === 'turn_end' ? [r.event.text] : []));

describe.skipIf(!available)('the trace of a session kept in Postgres', () => {
  it('a turn never waits for the trace: with the trace table locked, turns complete; the trace follows, in order, once the lock goes', async () => {
    await withSchema(async ({ store, admin, schema }) => {
      let n = 0;
      const session = await newSession({ llm: scriptedModel(() => ({ text: `answer ${++n}` })), home: tempHome(), store, env: {} });
      await admin.query('BEGIN');
      await admin.query(`LOCK TABLE ${schema}.trace IN ACCESS EXCLUSIVE MODE`); // every trace insert now waits
      for (let i = 1; i <= 5; i++) expect((await session.prompt(`question ${i}`)).text).toBe(`answer ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 300)); // past the trace's flush delay: a batch is waiting on the lock
      const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.entries`);
      expect(Number(rows[0]!.n)).toBe(10); // the log is written meanwhile: every question and answer
      await admin.query('COMMIT');
      await session.close(); // stores the trace before the lease goes
      const trace = await (await store.read(session.id)).readTrace();
      expect(turnEnds(trace)).toEqual(['answer 1', 'answer 2', 'answer 3', 'answer 4', 'answer 5']);
      expect(session.record.storage.trace.dropped).toBe(0);
    });
  });

  it('a trace that cannot be stored is dropped and counted; the turns and the log are unharmed', async () => {
    await withSchema(async ({ store, admin, schema }) => {
      await admin.query(
        `CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'trace refused'; END $$`,
      );
      await admin.query(`CREATE TRIGGER refuse BEFORE INSERT ON ${schema}.trace FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse()`);
      const session = await newSession({ llm: scriptedModel(() => ({ text: 'still answered' })), home: tempHome(), store, env: {} });
      expect((await session.prompt('one')).status).toBe('done');
      expect((await session.prompt('two')).text).toBe('still answered');
      await session.close();
      expect(session.record.storage.trace.dropped).toBeGreaterThan(0);
      const reader = await store.read(session.id);
      expect(await reader.readTrace()).toEqual([]);
      expect((await reader.readLog()).entries.filter((e) => e.type === 'message')).toHaveLength(4);
    });
  });

  it('goes in batches: at most one statement per turn (and one at the start), however many records a turn makes', async () => {
    await withSchema(async ({ store, traceInserts }) => {
      const session = await newSession({ llm: scriptedModel(() => ({ text: 'ok' })), home: tempHome(), store, env: {} });
      const turns = 20;
      for (let i = 0; i < turns; i++) await session.prompt(`question ${i}`);
      await session.close();
      const records = await (await store.read(session.id)).readTrace();
      expect(turnEnds(records)).toHaveLength(turns);
      expect(records.length).toBeGreaterThan(turns * 10); // a turn makes dozens of records
      expect(
        traceInserts(),
        `trace on Postgres: ${turns} turns, ${records.length} records, ${traceInserts()} INSERT statements`,
      ).toBeLessThanOrEqual(turns + 2);
    });
  });
});
