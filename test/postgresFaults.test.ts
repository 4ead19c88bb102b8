/**
 * A fast subset of the Postgres fault matrix of `npm run reliability` (docs/RELIABILITY.md
 * has it at full size), against a real PostgreSQL started for each case (the restart case
 * stops it, so it is never a shared one): instances killed and stopped mid-turn, the
 * server restarted mid-turn, the pool exhausted, instances racing for one session.
 */
import { describe, expect, it } from 'vitest';
import { postgresCases, type PostgresScale } from './reliability/postgres.js';
import type { FamilyResult } from './reliability/report.js';
import { postgresBin } from './storage/postgresServer.js';

const available = postgresBin() !== null;
if (!available) console.log('PostgreSQL not found: the Postgres fault matrix tests are skipped');

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
  it(
    'SIGKILL mid-turn: refused naming the dead holder until its lease ends, then taken over, nothing acknowledged lost',
    { timeout: 120_000 },
    async () => {
      expectAllSurvived(await postgresCases({ ...NONE, kills: 3 }, 5), 3);
    },
  );

  it(
    'SIGSTOP past the lease, also inside a memory-file write: another instance takes over, the late writes are refused, nothing interleaved',
    { timeout: 180_000 },
    async () => {
      const result = await postgresCases({ ...NONE, stops: 2 }, 5);
      expectAllSurvived(result, 2);
      expect(result.figures?.join('\n')).toMatch(/late writes refused by the fence in 2; 0 interleaved entries/);
    },
  );

  it('PostgreSQL restarted mid-turn: done or a clear error, nothing half-written, the next turn works', { timeout: 120_000 }, async () => {
    expectAllSurvived(await postgresCases({ ...NONE, restarts: 2 }, 5), 2);
  });

  it('the pool exhausted: many sessions on 3 connections finish; a held pool fails clearly, or waits', { timeout: 120_000 }, async () => {
    expectAllSurvived(await postgresCases({ ...NONE, poolSessions: 8 }, 5), 3);
  });

  it('4 instances race to create, open and take over one session: exactly one wins each time', { timeout: 120_000 }, async () => {
    expectAllSurvived(await postgresCases({ ...NONE, races: 6 }, 5), 6);
  });
});
