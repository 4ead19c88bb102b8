/**
 * The Postgres family's server faults (postgres.ts has the instance faults):
 * - PostgreSQL restarted (stopped fast, cutting every connection, then started) while a
 *   turn runs: the turn ends done or with a clear error naming the server; every row a
 *   whole entry, seqs without a gap, nothing acknowledged lost; the next turn works.
 * - The pool exhausted: many sessions at once on 3 connections all finish; a pool of the
 *   host's held by the host makes a turn wait, then fail clearly (or succeed when the host
 *   lets go in time), and the session works afterwards.
 * - Instances racing for one session (pgRacer.ts, 4 processes): to open it when it is
 *   free, to take it over from a holder whose lease expired, and to create it: exactly
 *   one wins each time; the others are refused with SessionInUseError naming the winner
 *   (for create: "exists already").
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { createSession, type Session } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import { metaFor } from '../storage/sessionMetaFixture.js';
import { historyProblems } from './checks.js';
import { sha } from './hash.js';
import { builtFile } from './built.js';
import { checkLog, dropSchema, modelOf, newSchema, seeded, sleep, type PgRun } from './pgCommon.js';

/** The log of an open session checked: problems, and acknowledged messages lost. */
async function sessionProblems(
  run: PgRun,
  schema: string,
  session: Session,
  acked: Map<number, string>,
): Promise<{ problems: string[]; lost: number }> {
  const log = await checkLog(run.server.url, schema, session.id);
  const bySeq = new Map(log.entries.map((e) => [e.seq, e]));
  const problems = [...log.problems, ...historyProblems(session.history)];
  let lost = 0;
  for (const [seq, hash] of acked) {
    const entry = bySeq.get(seq);
    if (!entry || entry.type !== 'message' || sha(JSON.stringify(entry.message)) !== hash) {
      lost++;
      problems.push(`acknowledged message ${seq} is ${entry ? 'changed' : 'missing'}`);
    }
  }
  return { problems, lost };
}

function acking(session: Session): Map<number, string> {
  const acked = new Map<number, string>();
  session.on('message_end', (e) => acked.set(e.seq, sha(JSON.stringify(e.message))));
  return acked;
}

/** An error as the figures quote it: the server's address (it changes every run) as <server>. */
function shortened(message: string): string {
  return message.replace(/^PostgreSQL at \S+: /, 'PostgreSQL at <server>: ').replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>');
}

const CLEAR = /^(PostgreSQL at postgres:\/\/|session [0-9a-f-]+: )/;

export async function restartCases(run: PgRun, trials: number): Promise<void> {
  if (!run.server.restart) return;
  const schema = newSchema();
  const store = postgresStore({ connectionString: run.server.url, schema, connectTimeoutMs: 3_000 });
  const session = await createSession({ llm: modelOf(run), home: run.home, store, cwd: '/pg', env: {}, trace: false });
  const acked = acking(session);
  const next = seeded(run.seed + 2);
  const outcomes = { done: 0, failed: 0 };
  const errors = new Set<string>();
  for (let t = 0; t < trials; t++) {
    const problems: string[] = [];
    // A slow turn (150 ms a request), the server stopped 0…200 ms into it and down 0…500 ms.
    const pending = session.prompt(`[slow ${session.state.turn + 1}] restart ${t}`);
    await sleep(next(200));
    const restarted = run.server.restart(next(500));
    const result = await pending;
    await restarted;
    if (result.status === 'done') outcomes.done++;
    else {
      outcomes.failed++;
      const message = result.error?.message ?? '';
      errors.add(shortened(message));
      if (!CLEAR.test(message)) problems.push(`the turn failed without naming the server: ${result.status} ${message}`);
    }
    const after = await session.prompt(`[R ${session.state.turn + 1}] after restart ${t}`);
    if (after.status !== 'done') problems.push(`the next turn ended ${after.status}: ${after.error?.message}`);
    const checked = await sessionProblems(run, schema, session, acked);
    problems.push(...checked.problems);
    run.tally.add('PostgreSQL restarted (stop -m fast, start) mid-turn', {
      survived: problems.length === 0,
      lost: checked.lost,
      detail: `trial ${t} (seed ${run.seed}): ${problems.join('; ')}`,
    });
  }
  await session.close();
  await store.close();
  run.figures.push(
    `Restart: ${trials} restarts mid-turn; the turn ended done in ${outcomes.done} (the server was back before it needed it), failed in ${outcomes.failed}, ` +
      `with ${[...errors].map((e) => `"${e}"`).join(', ') || 'no error'}; the next turn worked after every one`,
  );
  await dropSchema(run.server.url, schema);
}

export async function poolCases(run: PgRun, sessions: number): Promise<void> {
  const schema = newSchema();
  // Many sessions, 4 turns each, all at once, on 3 connections.
  {
    const store = postgresStore({ connectionString: run.server.url, schema, maxConnections: 3 });
    const problems: string[] = [];
    let lost = 0;
    const started = Date.now();
    const open = await Promise.all(
      Array.from({ length: sessions }, () =>
        createSession({ llm: modelOf(run), home: run.home, store, cwd: '/pool', env: {}, trace: false }),
      ),
    );
    const results = await Promise.all(
      open.map(async (session, i) => {
        const acked = acking(session);
        const statuses: string[] = [];
        for (let t = 1; t <= 4; t++) statuses.push((await session.prompt(`[P${i}x ${t}] pool`)).status);
        return { session, acked, statuses };
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    for (const { session, acked, statuses } of results) {
      if (statuses.some((s) => s !== 'done')) problems.push(`session ${session.id}: turns ${statuses.join(', ')}`);
      const checked = await sessionProblems(run, schema, session, acked);
      problems.push(...checked.problems);
      lost += checked.lost;
      await session.close();
    }
    await store.close();
    run.tally.add(
      `${sessions} sessions × 4 turns at once on a pool of 3 connections`,
      { survived: problems.length === 0, lost, detail: problems.slice(0, 5).join('; ') },
      `all waited and succeeded (${seconds.toFixed(1)} s)`,
    );
  }
  // The host's own pool, held by the host: a turn waits for a connection, then fails clearly; or succeeds when let go in time.
  const pool = new pg.Pool({ connectionString: run.server.url, max: 2, connectionTimeoutMillis: 1_000 });
  pool.on('error', () => {});
  const store = postgresStore({ pool, schema });
  const session = await createSession({ llm: modelOf(run), home: run.home, store, cwd: '/pool', env: {}, trace: false });
  const acked = acking(session);
  for (const letGoAfter of [null, 300]) {
    const problems: string[] = [];
    const held = await Promise.all([pool.connect(), pool.connect()]);
    const started = Date.now();
    const letGo = letGoAfter === null ? null : sleep(letGoAfter).then(() => held.forEach((c) => c.release()));
    const result = await session.prompt(`[H ${session.state.turn + 1}] held pool`);
    const waited = Date.now() - started;
    if (letGo) await letGo;
    else held.forEach((c) => c.release());
    if (letGoAfter === null) {
      // Clear: it names the server the pool reaches (not a default), and says it timed out.
      const server = new URL(run.server.url);
      const named = `PostgreSQL at postgres://${server.host}${server.pathname}?schema=${schema}: `;
      if (result.status !== 'failed' || !result.error?.message.startsWith(named) || !/timeout/i.test(result.error.message))
        problems.push(`expected a timeout naming ${named}, got ${result.status}: ${result.error?.message}`);
    } else if (result.status !== 'done')
      problems.push(`the turn did not wait for the connection: ${result.status} ${result.error?.message}`);
    const after = await session.prompt(`[H ${session.state.turn + 1}] pool back`);
    if (after.status !== 'done') problems.push(`the next turn ended ${after.status}: ${after.error?.message}`);
    const checked = await sessionProblems(run, schema, session, acked);
    problems.push(...checked.problems);
    run.tally.add(
      letGoAfter === null
        ? 'the host holds every connection of its pool (connectionTimeoutMillis 1 s)'
        : 'the host holds every connection, lets go after 300 ms',
      { survived: problems.length === 0, lost: checked.lost, detail: problems.join('; ') },
      letGoAfter === null
        ? `waited ${waited} ms, then: ${shortened(result.error?.message ?? result.status)}`
        : `waited ${waited} ms, then done`,
    );
  }
  await session.close();
  await store.close();
  await pool.end();
  await dropSchema(run.server.url, schema);
}

const RACERS = 4;

export async function raceCases(run: PgRun, trials: number): Promise<void> {
  const schema = newSchema();
  const store = postgresStore({ connectionString: run.server.url, schema });
  await store.list(); // the schema made before the racers start
  // A holder that dies: its lease of 300 ms runs out, never released (not less: a write of its own may not pause longer).
  const gone = postgresStore({ connectionString: run.server.url, schema, leaseMs: 300, renewMs: 0 });
  const script = builtFile('test/reliability/pgRacer.js');
  const children = Array.from({ length: RACERS }, () =>
    spawn(process.execPath, [script, run.server.url, schema, run.home], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const waiting: ((line: string) => void)[][] = children.map(() => []);
  children.forEach((child, i) => createInterface({ input: child.stdout }).on('line', (line) => waiting[i]!.shift()?.(line)));
  const ask = (i: number, line: string | null): Promise<string> =>
    new Promise((resolve) => {
      waiting[i]!.push(resolve);
      if (line !== null) children[i]!.stdin.write(`${line}\n`);
    });
  await Promise.all(children.map((_, i) => ask(i, null))); // each says `up`
  const kinds = ['create it', 'open it (free)', 'take it over (its holder gone, lease expired)'] as const;
  const wins = new Map<string, number>();
  try {
    for (let t = 0; t < trials; t++) {
      const kind = kinds[t % kinds.length]!;
      const id = randomUUID();
      if (kind !== 'create it') {
        const made = await (kind === 'open it (free)' ? store : gone).create({ meta: metaFor(id, '/race', 1) });
        if (kind === 'open it (free)') await made.close();
        else await sleep(320);
      }
      const at = Date.now() + 40;
      const answers = await Promise.all(children.map((_, i) => ask(i, `${kind === 'create it' ? 'create' : 'open'} ${id} ${at}`)));
      const winners = answers.map((a, i) => (a === 'got' ? i : -1)).filter((i) => i >= 0);
      const problems: string[] = [];
      if (winners.length !== 1) problems.push(`${winners.length} winners`);
      const winnerPid = children[winners[0] ?? 0]!.pid;
      for (const answer of answers) {
        if (answer === 'got') continue;
        if (kind === 'create it' ? !/exists already/.test(answer) : !answer.startsWith(`refused ${winnerPid} `))
          problems.push(`a loser answered: ${answer}`);
      }
      wins.set(String(winners[0]), (wins.get(String(winners[0])) ?? 0) + 1);
      await Promise.all(children.map((_, i) => ask(i, 'release')));
      run.tally.add(
        `${RACERS} instances race to ${kind}`,
        { survived: problems.length === 0, detail: `trial ${t}: ${problems.join('; ')}` },
        kind === 'create it'
          ? 'exactly one wins; the others: "exists already"'
          : 'exactly one wins; the others: SessionInUseError naming it',
      );
    }
  } finally {
    for (const child of children) child.stdin.end();
    await Promise.all(children.map((c) => new Promise((resolve) => c.on('exit', resolve))));
    await store.close();
    await gone.close();
  }
  run.figures.push(
    `Races: ${trials} races of ${RACERS} processes; wins per racer ${[...wins.entries()].map(([i, n]) => `#${i}: ${n}`).join(', ')}`,
  );
  await dropSchema(run.server.url, schema);
}
