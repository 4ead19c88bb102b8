/**
 * A fast subset of the Postgres fault matrix of `npm run reliability` (docs/reliability.md
 * has it at full size), against real PostgreSQL servers of its own, never the run's (the
 * restart case stops its server): instances killed and stopped mid-turn, the
 * server restarted mid-turn, the pool exhausted, instances racing for one session.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/llm/scriptedModel.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { newSession, tempHome } from '../helpers.js';
import { checkLog, dropSchema } from '../reliability/pgCommon.js';
import { postgresCases, type PostgresScale } from '../reliability/postgres.js';
import type { FamilyResult } from '../reliability/report.js';
import { metaFor } from './contract.js';
import { observedPool } from './observedPool.js';
import { postgresBin, startPostgres, usePostgres, type PostgresServer } from './postgresServer.js';

// The matrix's cases run on servers of their own (initdb), even when the run was given one:
// the restart case starts one to stop, the others share one started for this file.
const available = postgresBin() !== null;
let matrixServer: PostgresServer | null = null;
beforeAll(async () => {
  if (available) matrixServer = await startPostgres(postgresBin()!);
});
afterAll(async () => {
  await matrixServer?.stop();
});
const onMatrixServer = (scale: PostgresScale): Promise<FamilyResult> => postgresCases(scale, 5, matrixServer!);
// The in-process cases share the run's server.
const shared = usePostgres('fault');

const NONE: PostgresScale = { kills: 0, stops: 0, restarts: 0, races: 0, poolSessions: 0 };

function expectAllSurvived(result: FamilyResult, atLeast: number): void {
  const tried = result.rows.reduce((n, r) => n + r.tried, 0);
  const report = result.failures.map((f) => `${f.fault}: ${f.detail}`).join('\n');
  expect(report).toBe('');
  expect(tried).toBeGreaterThanOrEqual(atLeast);
  expect(result.rows.reduce((n, r) => n + r.survived, 0)).toBe(tried);
  expect(result.rows.reduce((n, r) => n + r.lost, 0)).toBe(0);
}

describe.skipIf(!available)('the Postgres fault matrix (fast subset)', () => {
  it('SIGKILL mid-turn: refused naming the dead holder until its lease ends, then taken over, nothing acknowledged lost', async () => {
    expectAllSurvived(await onMatrixServer({ ...NONE, kills: 3 }), 3);
  });

  it('SIGSTOP past the lease, also inside a memory-file write: another instance takes over, the late writes are refused, nothing interleaved', async () => {
    const result = await onMatrixServer({ ...NONE, stops: 2 });
    expectAllSurvived(result, 2);
    expect(result.figures?.join('\n')).toMatch(/late writes refused by the fence in 2; 0 interleaved entries/);
  });

  it('PostgreSQL restarted mid-turn: done or a clear error, nothing half-written, the next turn works', async () => {
    expectAllSurvived(await postgresCases({ ...NONE, restarts: 2 }, 5), 2);
  });

  it('the pool exhausted: many sessions on 3 connections finish; a held pool fails clearly, or waits', async () => {
    expectAllSurvived(await onMatrixServer({ ...NONE, poolSessions: 8 }), 3);
  });

  it('4 instances race to create, open and take over one session: exactly one wins each time', async () => {
    expectAllSurvived(await onMatrixServer({ ...NONE, races: 6 }), 6);
  });

  it.skipIf(!shared.available)(
    'an append committed whose answer was lost (the connection cut after): the entry counts as written, once, and the session goes on',
    async () => {
      const url = shared.server().url;
      const schema = `workmem_t_${randomBytes(6).toString('hex')}`;
      let armed = false;
      let checks = 0; // how many looks for the lost row fail too (the server still unreachable)
      const pool = observedPool(
        { connectionString: url, max: 4 },
        {
          // The next append of an entry reaches the server and commits; its answer never comes back.
          fail: (text) => {
            if (checks > 0 && /^SELECT body FROM \S+\.entries/.test(text)) {
              checks--;
              return new Error('connect ECONNREFUSED');
            }
            if (!armed || !/INSERT INTO \S+\.entries/.test(text)) return null;
            armed = false;
            return new Error('Connection terminated unexpectedly');
          },
        },
      );
      const store = postgresStore({ pool, schema });
      try {
        const session = await newSession({
          llm: scriptedModel(() => ({ text: 'An answer.' })),
          home: tempHome(),
          store,
          env: {},
          trace: false,
        });
        expect((await session.prompt('one')).status).toBe('done');
        armed = true;
        const second = await session.prompt('two');
        const third = await session.prompt('three');
        expect(armed).toBe(false);
        expect([second.status, second.error?.message]).toEqual(['done', undefined]);
        expect([third.status, third.error?.message]).toEqual(['done', undefined]);
        // Found at once. Now the look fails too: the turn fails, and the next append finds the row.
        armed = true;
        checks = 1;
        const fourth = await session.prompt('four');
        expect([fourth.status, fourth.error?.message]).toEqual([
          'failed',
          expect.stringMatching(/^PostgreSQL at .*Connection terminated unexpectedly$/),
        ]);
        const fifth = await session.prompt('five');
        expect([fifth.status, fifth.error?.message]).toEqual(['done', undefined]);
        await session.close();
        const log = await checkLog(url, schema, session.id);
        expect(log.problems).toEqual([]);
        const said = log.entries.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.message.content] : []));
        expect(said).toEqual(['one', 'two', 'three', 'four', 'five']);
      } finally {
        await store.close();
        await pool.end();
        await dropSchema(url, schema);
      }
    },
  );

  it.skipIf(!shared.available)(
    'a session closed while its lease is being renewed is free at once: the renewal cannot land after the release',
    async () => {
      const url = shared.server().url;
      const schema = `workmem_t_${randomBytes(6).toString('hex')}`;
      // Renewed every millisecond: a renewal is nearly always in flight when the session closes.
      const a = postgresStore({ connectionString: url, schema, leaseMs: 10_000, renewMs: 1 });
      const b = postgresStore({ connectionString: url, schema, leaseMs: 10_000 });
      try {
        const id = randomUUID();
        await (await a.create({ meta: metaFor(id) })).close();
        const refused: string[] = [];
        for (let i = 0; i < 40; i++) {
          const held = await a.open(id);
          await new Promise((resolve) => setTimeout(resolve, i % 5));
          await held.close();
          try {
            await (await b.open(id)).close();
          } catch (error) {
            refused.push(`${i}: ${(error as Error).message}`);
          }
        }
        expect(refused).toEqual([]);
      } finally {
        await a.close();
        await b.close();
        await dropSchema(url, schema);
      }
    },
  );
});
