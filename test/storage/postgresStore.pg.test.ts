/**
 * The Postgres store against a real PostgreSQL (test/storage/postgresServer.ts): the
 * storage port's contract, fencing included, its own schema and location, and a whole
 * session (create → prompts → close → open → resume) kept in Postgres. Skipped, saying
 * so in one line, where PostgreSQL is not installed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { SequenceConflictError } from '../../src/storage/storeErrors.js';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { openSession } from '../../src/session/index.js';
import { newSession, tempHome } from '../helpers.js';
import { metaFor, sessionStoreContract } from './contract.js';
import { usePostgres } from './postgresServer.js';

const { available, server: serverOf } = usePostgres('store');

/** A schema of its own per test: the tests share one database and never see each other's rows. */
function newSchema(): string {
  return `workmem_t_${randomBytes(6).toString('hex')}`;
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverOf().url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

describe.skipIf(!available)('the Postgres session store', () => {
  sessionStoreContract('postgres', async () => {
    const schema = newSchema();
    return {
      connect: async () => postgresStore({ connectionString: serverOf().url, schema }),
      connectPaused: async (leaseMs) => postgresStore({ connectionString: serverOf().url, schema, leaseMs, renewMs: 0 }),
      destroy: () => dropSchema(schema),
    };
  });

  it('creates and versions its schema itself; a second instance finds it current; a newer one is refused', async () => {
    const schema = newSchema();
    const a = postgresStore({ connectionString: serverOf().url, schema });
    const b = postgresStore({ connectionString: serverOf().url, schema });
    try {
      await Promise.all([a.list(), b.list()]); // both migrate at once: one does, the other waits and finds it done
      const client = new pg.Client({ connectionString: serverOf().url });
      await client.connect();
      try {
        const versions = await client.query(`SELECT version FROM ${schema}.workmem_schema_version ORDER BY version`);
        expect(versions.rows.map((r: { version: number }) => r.version)).toEqual([1, 2]);
        // A database left at version 1 by an older workmem is brought to 2, its sessions kept.
        await client.query(`DROP TABLE ${schema}.state, ${schema}.trace; DELETE FROM ${schema}.workmem_schema_version WHERE version = 2`);
        await client.query(`INSERT INTO ${schema}.sessions (id, cwd, created_at, meta) VALUES ('${randomUUID()}', '/old', 1, '{}')`);
        const older = postgresStore({ connectionString: serverOf().url, schema });
        expect((await older.list()).map((s) => s.cwd)).toEqual(['/old']);
        await older.close();
        const after = await client.query(`SELECT version FROM ${schema}.workmem_schema_version ORDER BY version`);
        expect(after.rows.map((r: { version: number }) => r.version)).toEqual([1, 2]);
        await client.query(`SELECT key FROM ${schema}.state UNION ALL SELECT record FROM ${schema}.trace`);
        await client.query(`INSERT INTO ${schema}.workmem_schema_version (version) VALUES (99)`);
      } finally {
        await client.end();
      }
      const c = postgresStore({ connectionString: serverOf().url, schema });
      await expect(c.list()).rejects.toThrow(/schema version 99, newer than this workmem knows \(2\)/);
      await c.close();
    } finally {
      await a.close();
      await b.close();
      await dropSchema(schema);
    }
  });

  it('names a session by server, database, cwd and id, never with a password; bad options are refused clearly', async () => {
    const schema = newSchema();
    const url = new URL(serverOf().url);
    url.password = 'hunter2-secret';
    const store = postgresStore({ connectionString: url.toString(), schema });
    try {
      expect(store.location).not.toContain('hunter2');
      expect(store.location).toMatch(/^postgres:\/\/127\.0\.0\.1:\d+\/\w+/);
      // trust auth: the password is never checked, so the store works and must still not show it.
      const s = await store.create({ meta: metaFor(randomUUID(), '/work/project') });
      expect(s.location).toBe(`${store.location}#/work/project/${s.id}`);
      expect(s.location).not.toContain('hunter2');
      await s.close();
    } finally {
      await store.close();
      await dropSchema(schema);
    }
    expect(() => postgresStore({ connectionString: serverOf().url, schema: 'bad; DROP TABLE x' })).toThrow(
      /schema .* is not a plain SQL name/,
    );
    expect(() => postgresStore({} as never)).toThrow(/connectionString or a pool/);
    const down = postgresStore({ connectionString: 'postgres://someone:sekrit@127.0.0.1:1/nowhere', connectTimeoutMs: 2_000 });
    const error = (await down.list().catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/PostgreSQL at postgres:\/\/127\.0\.0\.1:1\/nowhere/);
    expect(error.message).not.toContain('sekrit');
    await down.close();
  });

  it('a compaction commit is one transaction: when its entry is refused inside it, its archive is not there either', async () => {
    const schema = newSchema();
    const store = postgresStore({ connectionString: serverOf().url, schema });
    const client = new pg.Client({ connectionString: serverOf().url });
    await client.connect();
    try {
      const s = await store.create({ meta: metaFor(randomUUID()) });
      await s.log.append({ type: 'event', turn: 1, name: 'one', data: {} }, { expectedSeq: 1, sync: true });
      // A row this storage does not know of takes seq 2 behind its back: the commit passes the
      // checks made before its transaction, writes the archive, and is refused at the insert.
      await client.query(`INSERT INTO ${schema}.entries (session_id, seq, body) VALUES ($1, 2, '{}')`, [s.id]);
      const archive = [{ path: 'detail/compact.md', content: '# turns 1-3', append: false }];
      const refused = await s
        .commit(archive, { type: 'event', turn: 2, name: 'compacted', data: {} }, { expectedSeq: 2 })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SequenceConflictError);
      expect(await s.memory.exists('detail/compact.md')).toBe(false);
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM ${schema}.memory_files WHERE session_id = $1 AND path LIKE 'detail/%'`,
        [s.id],
      );
      expect(rows[0].n).toBe(0);
      expect(s.log.nextSeq).toBe(2);
      await s.close();
    } finally {
      await client.end();
      await store.close();
      await dropSchema(schema);
    }
  });

  it('keeps key-value state in its state table: JSON values, listed by a prefix taken literally', async () => {
    const schema = newSchema();
    const store = postgresStore({ connectionString: serverOf().url, schema });
    try {
      const state = store.state!();
      await state.set('items:session:a_1:x', { text: 'one', n: 1 });
      await state.set('items:session:a%1:y', ['two']);
      await state.set('items:session:ab1:z', 'three');
      await state.set('items:session:a_1:x', { text: 'one, again', n: 2 });
      expect(await state.get('items:session:a_1:x')).toEqual({ text: 'one, again', n: 2 });
      expect(await state.get('missing')).toBeUndefined();
      // `_` and `%` are wildcards to LIKE: here they are only themselves.
      expect(await state.entries('items:session:a_1:')).toEqual([['items:session:a_1:x', { text: 'one, again', n: 2 }]]);
      expect(await state.entries('items:session:a%')).toEqual([['items:session:a%1:y', ['two']]]);
      await state.delete('items:session:ab1:z');
      expect((await state.entries('items:')).map(([key]) => key)).toEqual(['items:session:a%1:y', 'items:session:a_1:x']);
      await expect(state.set('fn', () => 1)).rejects.toThrow(/cannot be stored/);
      expect(state.path).toContain('table state');
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });

  it('a whole session lives in Postgres: prompts, close, open, resume where it left off', async () => {
    const schema = newSchema();
    const home = tempHome();
    const store = postgresStore({ connectionString: serverOf().url, schema });
    try {
      const replies = ['First answer.', 'Second answer.', 'Third answer, after the resume.'];
      const llm = () => scriptedModel(() => ({ text: replies.shift() ?? 'out of script' }));
      const session = await newSession({ llm: llm(), home, store, env: {} }); // the trace on, as by default
      expect((await session.prompt('one')).text).toBe('First answer.');
      expect((await session.prompt('two')).text).toBe('Second answer.');
      const id = session.id;
      await session.close();
      const again = await openSession(id.slice(0, 8), { llm: llm(), home, store, env: {} });
      const result = await again.prompt('three');
      expect(result.text).toBe('Third answer, after the resume.');
      expect(result.turn).toBe(3);
      await again.close();
      // The trace of a session kept in the database is in the database: both runs, in order, nothing under the home.
      const trace = (await (await store.read(id)).readTrace()).map(
        (r) => JSON.parse(r) as { k: string; resumed?: boolean; event?: { type: string; text?: string } },
      );
      expect(trace.filter((r) => r.k === 'header').map((r) => r.resumed)).toEqual([false, true]);
      expect(trace.flatMap((r) => (r.event?.type === 'turn_end' ? [r.event.text] : []))).toEqual([
        'First answer.',
        'Second answer.',
        'Third answer, after the resume.',
      ]);
      expect(existsSync(join(home, 'traces'))).toBe(false);
      const reopened = await store.open(id);
      const entries = (await reopened.log.read()).entries.filter((e) => e.type === 'message');
      expect(entries.map((e) => e.type === 'message' && e.message.content)).toEqual([
        'one',
        'First answer.',
        'two',
        'Second answer.',
        'three',
        'Third answer, after the resume.',
      ]);
      expect(await reopened.memory.read('overview.md', { maxBytes: 10_000 })).toMatch(/^#/);
      const meta = await reopened.readMeta();
      expect(meta.ok && meta.meta.messageCount).toBe(6);
      await reopened.close();
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});
