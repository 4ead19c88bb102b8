/**
 * The fault matrix on PostgreSQL (issue 15), against a real server started for the run:
 * instances are processes (pgInstance.ts) running turns against the test model server.
 * - SIGKILL mid-turn: another instance is refused (SessionInUseError naming the dead
 *   holder and its lease's end) until the lease expires, then takes over; every message
 *   the dead instance acknowledged is in the log, unchanged; a new turn works.
 * - SIGSTOP past the lease's expiry, another instance takes over and writes, SIGCONT: the
 *   stopped instance's late writes are refused by the fence; no entry of it after the new
 *   holder's first; seqs without a gap, turns never going back. Half the stops land inside
 *   a memory-file write's transaction (holding a share lock on the lease row).
 * The server faults (restart, pool, races) are in pgServerFaults.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createSession, openSession } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { SessionInUseError } from '../../src/storage/storeErrors.js';
import { startTestServer } from '../../src/testing/index.js';
import { postgresBin, startPostgres, type PostgresServer } from '../storage/postgresServer.js';
import { historyProblems } from './checks.js';
import { sha } from './hash.js';
import {
  acksOf,
  checkLog,
  dropSchema,
  leaseClock,
  modelOf,
  newSchema,
  seeded,
  sleep,
  startInstance,
  taggedPolicy,
  writerOf,
  type PgRun,
} from './pgCommon.js';
import type { InstanceConfig } from './pgInstance.js';
import { poolCases, raceCases, restartCases } from './pgServerFaults.js';
import { Tally, type FamilyResult } from './report.js';
import { section } from './section.js';
import { machine, median } from '../bench/harness.js';
import { HANG_MS } from '../hangGuard.js';

export interface PostgresScale {
  kills: number;
  stops: number;
  restarts: number;
  races: number;
  poolSessions: number;
}

export const PG_FULL: PostgresScale = { kills: 60, stops: 20, restarts: 20, races: 200, poolSessions: 60 };

/** The family's section of docs/reliability.md. */
export const postgresSection = {
  heading: '## PostgreSQL',
  render: (result: FamilyResult, seconds: number): string =>
    section(
      postgresSection.heading,
      [
        `The fault matrix of the Postgres store, written by \`npm run reliability\` (alone: \`npm run reliability -- --only postgres\`)`,
        `on ${new Date().toISOString().slice(0, 10)}, on ${machine()}; ${seconds.toFixed(0)} s. A PostgreSQL is started for the run (loopback, fsync off);`,
        `instances are separate processes (test/reliability/pgInstance.ts) running turns against the test model server, with a lease of ${LEASE_MS} ms`,
        `renewed every ${RENEW_MS} ms. **survived**: the case went as its row says, afterwards every acknowledged message was in the log unchanged,`,
        'every row a whole entry, seqs 1…n without a gap, turns never going back (no interleaving), the history a valid message list, and a new',
        'turn worked. A fast subset runs in `npm test` (test/storage/postgresFaults.pg.test.ts).',
      ],
      result,
    ),
};

const LEASE_MS = 1_000;
const RENEW_MS = 300;

/** `given`: a server the caller started for the matrix (startPostgres), kept running; by default one of its own. */
export async function postgresCases(scale: PostgresScale, seed = 1, given?: PostgresServer): Promise<FamilyResult> {
  const tally = new Tally('PostgreSQL');
  const bin = postgresBin();
  if (!bin) {
    return { rows: [], failures: [], figures: ['PostgreSQL is not installed here: the Postgres fault matrix did not run'] };
  }
  // A server of our own (not one other tests share): the restart case stops it.
  const server = given ?? (await startPostgres(bin));
  const model = await startTestServer({ policy: taggedPolicy, chunkDelayMs: 1 });
  const home = mkdtempSync(join(tmpdir(), 'workmem-pgfaults-'));
  const run: PgRun = { server, model, home, tally, figures: [], seed };
  try {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    run.figures.push(`PostgreSQL ${(await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version}`);
    await client.end();
    const cases: [string, number, (run: PgRun, n: number) => Promise<void>][] = [
      ['SIGKILL', scale.kills, killCases],
      ['SIGSTOP', scale.stops, stopCases],
      ['restart', scale.restarts, restartCases],
      ['pool', scale.poolSessions, poolCases],
      ['races', scale.races, raceCases],
    ];
    for (const [name, n, runCase] of cases) {
      if (!n) continue;
      try {
        await runCase(run, n);
      } catch (error) {
        // A case that throws is a failure of its own, and the others still run.
        tally.add(`${name}: the case itself`, { survived: false, detail: `threw ${(error as Error).stack ?? error}` });
      }
    }
  } finally {
    await model.close();
    if (!given) await server.stop();
    rmSync(home, { recursive: true, force: true });
  }
  return tally.result(run.figures);
}

function instanceConfig(run: PgRun, schema: string, id: string, tag: string, turns: number, stopAt?: 'memory-write'): InstanceConfig {
  return {
    url: run.server.url,
    schema,
    home: run.home,
    id,
    tag,
    baseURL: run.model.baseURL,
    leaseMs: LEASE_MS,
    renewMs: RENEW_MS,
    turns,
    ...(stopAt ? { stopAt } : {}),
  };
}

/** Every acknowledged message present and unchanged: the problems, and how many were lost. */
function lostAcks(
  acked: Map<number, string>,
  entries: Awaited<ReturnType<typeof checkLog>>['entries'],
): { lost: number; problems: string[] } {
  const bySeq = new Map(entries.map((e) => [e.seq, e]));
  const problems: string[] = [];
  for (const [seq, hash] of acked) {
    const entry = bySeq.get(seq);
    if (!entry || entry.type !== 'message' || sha(JSON.stringify(entry.message)) !== hash)
      problems.push(`acknowledged message ${seq} is ${entry ? 'changed' : 'missing'}`);
  }
  return { lost: problems.length, problems };
}

async function killCases(run: PgRun, trials: number): Promise<void> {
  const schema = newSchema();
  const store = postgresStore({ connectionString: run.server.url, schema, leaseMs: LEASE_MS, renewMs: RENEW_MS });
  const first = await createSession({ llm: modelOf(run), home: run.home, store, cwd: '/pg', env: {}, trace: false });
  const id = first.id;
  await first.close();
  const next = seeded(run.seed);
  const acked = new Map<number, string>();
  const takeovers: number[] = [];
  let midTurn = 0;
  const done = new Set<number>();
  for (let t = 0; t < trials; t++) {
    const problems: string[] = [];
    const child = startInstance(instanceConfig(run, schema, id, `K${t}x`, 1_000));
    const ready = await child.waitFor(/^(READY|REFUSED|FAILED)/, 30_000);
    if (ready !== 'READY') problems.push(`the instance did not open the session: ${ready ?? child.lines.join(' | ')}`);
    // Killed 20…420 ms into its turns: nearly always with a request out or an append in flight.
    await sleep(20 + next(400));
    child.signal('SIGKILL');
    const killedAt = Date.now();
    await child.exited;
    for (const [seq, hash] of acksOf(child.lines)) acked.set(seq, hash);
    // Turns it reported done: each one's answer must be in the log after the takeover.
    for (const line of child.lines) if (/^TURN \d+ done$/.test(line)) done.add(Number(line.split(' ')[1]));
    // Mid-turn: killed while a prompt() was pending (its last word is not a turn's end).
    if (
      !child.lines
        .filter((l) => !l.startsWith('STDERR'))
        .at(-1)
        ?.startsWith('TURN ')
    )
      midTurn++;
    // Before the lease ends: refused, naming the dead holder and when its lease ends.
    let until = 0;
    // The dead holder's lease as the server holds it: a loaded machine may have let the child
    // renew late, so when it ends is read, not assumed from the renewal interval.
    const held = await leaseClock(run.server.url, schema, id);
    try {
      const s = await openSession(id, { llm: modelOf(run), home: run.home, store, env: {}, trace: false });
      const opened = await leaseClock(run.server.url, schema, id);
      await s.close();
      if (opened.now < held.until) problems.push('opened at once, while the dead instance’s lease still ran');
    } catch (error) {
      if (!(error instanceof SessionInUseError)) problems.push(`refused with ${(error as Error).name}: ${(error as Error).message}`);
      else {
        until = (error as SessionInUseError).until ?? 0;
        if ((error as SessionInUseError).pid !== child.pid)
          problems.push(`refused naming pid ${(error as SessionInUseError).pid}, not ${child.pid}`);
        if (!error.message.includes(new Date(until).toISOString())) problems.push(`refused without saying until when: ${error.message}`);
      }
    }
    await sleep(Math.max(0, until - Date.now()) + 20);
    // Taken over once the lease expired; nothing acknowledged lost; a new turn works.
    let lost = 0;
    try {
      const session = await openSession(id, { llm: modelOf(run), home: run.home, store, env: {}, trace: false });
      takeovers.push(Date.now() - killedAt);
      try {
        const log = await checkLog(run.server.url, schema, id);
        const missing = lostAcks(acked, log.entries);
        const answered = new Set(
          log.entries.map((e) => (e.type === 'message' && e.message.role === 'assistant' && !e.message.tool_calls?.length ? e.turn : -1)),
        );
        const unanswered = [...done].filter((n) => !answered.has(n));
        lost = missing.lost + unanswered.length;
        problems.push(...log.problems, ...missing.problems, ...historyProblems(session.history));
        if (unanswered.length) problems.push(`turns ${unanswered.join(', ')} were reported done, but their answers are not in the log`);
        const off = session.on('message_end', (e) => acked.set(e.seq, sha(JSON.stringify(e.message))));
        const result = await session.prompt(`[P${t}x ${session.state.turn + 1}] after the kill`);
        off();
        if (result.status !== 'done') problems.push(`a new turn after the takeover ended ${result.status}: ${result.error?.message}`);
      } finally {
        await session.close();
      }
    } catch (error) {
      problems.push(`not taken over after the lease expired: ${(error as Error).message}`);
    }
    run.tally.add('SIGKILL of an instance mid-turn; another takes over after the lease', {
      survived: problems.length === 0,
      lost,
      detail: `trial ${t} (seed ${run.seed}): ${problems.join('; ')}`,
    });
  }
  const log = await checkLog(run.server.url, schema, id);
  run.figures.push(
    `SIGKILL: ${trials} kills on one session, ${midTurn} of them mid-turn (a prompt() pending); ${done.size} turns reported done and ${acked.size} acknowledged messages checked after every takeover; ` +
      `${log.entries.length} entries in the end; takeover ${Math.round(median(takeovers))} ms after the kill (median, max ${Math.max(...takeovers)} ms; lease ${LEASE_MS} ms, renewed every ${RENEW_MS} ms)`,
  );
  await store.close();
  await dropSchema(run.server.url, schema);
}

async function stopCases(run: PgRun, trials: number): Promise<void> {
  const schema = newSchema();
  const store = postgresStore({ connectionString: run.server.url, schema, leaseMs: LEASE_MS, renewMs: RENEW_MS });
  const first = await createSession({ llm: modelOf(run), home: run.home, store, cwd: '/pg', env: {}, trace: false });
  const id = first.id;
  await first.close();
  await store.close();
  const next = seeded(run.seed + 1);
  let refused = 0;
  let interleaved = 0;
  for (let t = 0; t < trials; t++) {
    const inTransaction = t % 2 === 1;
    const problems: string[] = [];
    const before = (await checkLog(run.server.url, schema, id)).entries.length;
    const a = startInstance(instanceConfig(run, schema, id, 'A', 1_000, inTransaction ? 'memory-write' : undefined));
    if ((await a.waitFor(/^(READY|REFUSED|FAILED)/, 30_000)) !== 'READY') problems.push(`A did not open: ${a.lines.join(' | ')}`);
    if (inTransaction) {
      if (!(await a.waitFor(/^STOPPING/, 20_000))) problems.push('A never reached a memory-file write');
    } else {
      await sleep(30 + next(300));
      a.signal('SIGSTOP');
    }
    await sleep(50); // what A said before it stopped reaches us
    const ackedByA = new Map(acksOf(a.lines));
    await sleep(LEASE_MS + 100);
    // B takes over while A sleeps, and writes.
    const b = startInstance(instanceConfig(run, schema, id, 'B', 3));
    const bEnded = await Promise.race([b.exited.then(() => true), sleep(HANG_MS).then(() => false)]);
    if (!bEnded) {
      problems.push('B did not take over while A was stopped (hang guard)');
      b.signal('SIGKILL');
      await b.exited;
    }
    if (!b.lines.includes('DONE')) problems.push(`B: ${b.lines.filter((l) => !l.startsWith('ACK')).join(' | ')}`);
    a.signal('SIGCONT');
    const aEnded = await Promise.race([a.exited.then(() => true), sleep(HANG_MS).then(() => false)]);
    if (!aEnded) {
      problems.push('A did not end after SIGCONT');
      a.signal('SIGKILL');
    }
    const late = a.lines.filter((l) => l.startsWith('TURN ') && !l.endsWith(' done'));
    if (late.length && late.every((l) => /taken over/.test(l))) refused++;
    else
      problems.push(
        `A's late writes were not refused by the fence: ${a.lines
          .filter((l) => !l.startsWith('ACK'))
          .slice(-4)
          .join(' | ')
          .slice(0, 1_500)}`,
      );
    const log = await checkLog(run.server.url, schema, id);
    const mine = log.entries.slice(before);
    const firstB = mine.findIndex((e) => writerOf(e) === 'B');
    const lateA = firstB < 0 ? 0 : mine.slice(firstB).filter((e) => writerOf(e) === 'A').length;
    interleaved += lateA + log.problems.filter((p) => p.includes('interleaved')).length;
    if (firstB < 0) problems.push('no entry of B in the log');
    if (lateA) problems.push(`${lateA} entries of A after B's first`);
    const missing = lostAcks(new Map([...ackedByA, ...acksOf(b.lines)]), log.entries);
    problems.push(...log.problems, ...missing.problems);
    run.tally.add(
      inTransaction
        ? 'SIGSTOP inside a memory-file write (fence lock held) past the lease; B takes over and writes; SIGCONT'
        : 'SIGSTOP of the lease holder mid-turn past the lease; B takes over and writes; SIGCONT',
      { survived: problems.length === 0, lost: missing.lost, detail: `trial ${t} (seed ${run.seed}): ${problems.join('; ')}` },
    );
  }
  run.figures.push(
    `SIGSTOP: ${trials} stops (half inside a memory-file write's transaction); late writes refused by the fence in ${refused}; ${interleaved} interleaved entries`,
  );
  await dropSchema(run.server.url, schema);
}
