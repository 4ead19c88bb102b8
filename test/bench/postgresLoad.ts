/**
 * The Postgres load bench of `npm run bench` (issue 15): N instances × M sessions on one
 * PostgreSQL, turns with a zero-latency model. An instance is a store of its own (its own
 * pg pool of 10 connections, its own lease holder name, its own home) in this one process:
 * what is measured is workmem's cost and the database's, not Node's start-up. Round trips
 * are counted by a pool that sees every statement (test/storage/observedPool.ts), given to
 * each store through its `pool` option.
 *
 * - Throughput and turn latency with all N×M sessions running turns at once.
 * - Orchestration overhead per request, one session at a time (nothing queued behind
 *   others), with 100 and 10k messages in the log: the ≤ 3 ms target, and its growth.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Keyv from 'keyv';
import pg from 'pg';
import { createSession, openSession, type Session } from '../../src/session/index.js';
import { postgresStore } from '../../src/storage/postgres/postgresStore.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { loadTokenCounter, type TokenCounter } from '../../src/tokens/tokens.js';
import { observedPool } from '../storage/observedPool.js';
import { testPostgres } from '../storage/postgresServer.js';
import { LONG_HISTORY_ARCHIVE, longHistoryEntries, zeroLatencyModel } from './benchmarks.js';
import { median, now, p99, type Row } from './harness.js';

export interface PostgresLoadScale {
  instances: number;
  sessionsPerInstance: number;
  turnsPerSession: number;
  historySizes: number[];
  warmup: number;
  samples: number;
}

export const PG_LOAD_FULL: PostgresLoadScale = {
  instances: 4,
  sessionsPerInstance: 200,
  turnsPerSession: 5,
  historySizes: [100, 10_000],
  warmup: 50,
  samples: 500,
};
export const PG_LOAD_SMOKE: PostgresLoadScale = {
  instances: 2,
  sessionsPerInstance: 3,
  turnsPerSession: 2,
  historySizes: [100, 400],
  warmup: 3,
  samples: 10,
};

interface Instance {
  store: SessionStore;
  pool: pg.Pool;
  home: string;
}

/** The rows; none (and a line on stderr) where there is no PostgreSQL. `url`: a server to use instead of starting one. */
export async function postgresLoad(scale: PostgresLoadScale, url?: string): Promise<Row[]> {
  const server = url ? null : await testPostgres();
  const connectionString = url ?? server?.url;
  if (!connectionString) {
    process.stderr.write('bench: PostgreSQL not found: the Postgres load bench is skipped\n');
    return [];
  }
  const schema = `workmem_bench_${randomBytes(4).toString('hex')}`;
  let statements = 0;
  const instances: Instance[] = Array.from({ length: scale.instances }, () => {
    const pool = observedPool({ connectionString, max: 10 }, { sent: () => void statements++ });
    return { pool, store: postgresStore({ pool, schema }), home: mkdtempSync(join(tmpdir(), 'workmem-bench-pg-')) };
  });
  const version = await serverVersion(connectionString);
  // The machine's load at the start: the figures of a shared machine are read with it.
  const where = `Postgres ${version} on loopback${server ? ', fsync off' : ''}; load average ${loadavg()[0]!.toFixed(1)} at the start`;
  try {
    const rows: Row[] = [];
    for (const [stateIn, state] of STATE_IN) rows.push(...(await load(scale, instances, () => statements, where, stateIn, state())));
    rows.push(...(await historyGrowth(scale, instances[0]!, () => statements, connectionString, schema, where)));
    return rows;
  } finally {
    for (const instance of instances) {
      await instance.store.close();
      await instance.pool.end();
      rmSync(instance.home, { recursive: true, force: true });
    }
    await dropSchema(connectionString, schema);
    await server?.stop();
  }
}

/** The two places the sessions' state (reminder tracker, item memory) is kept: the database (the default for a Postgres session), and memory (a keyv Map). */
const STATE_IN: [string, () => Keyv | undefined][] = [
  ['state in Postgres', () => undefined],
  ['state in memory', () => new Keyv()],
];

async function load(
  scale: PostgresLoadScale,
  instances: Instance[],
  counted: () => number,
  where: string,
  stateIn: string,
  state: Keyv | undefined,
): Promise<Row[]> {
  const sessions: Session[] = [];
  for (const instance of instances) {
    // Created 20 at a time per instance, as a service would as users arrive.
    for (let i = 0; i < scale.sessionsPerInstance; i += 20) {
      const batch = Math.min(20, scale.sessionsPerInstance - i);
      sessions.push(
        ...(await Promise.all(
          Array.from({ length: batch }, () =>
            createSession({
              llm: zeroLatencyModel(),
              home: instance.home,
              store: instance.store,
              cwd: '/bench',
              env: {},
              trace: false,
              ...(state ? { stateStore: state } : {}),
            }),
          ),
        )),
      );
    }
  }
  await Promise.all(sessions.map((s) => s.prompt('warm-up')));
  const latencies: number[] = [];
  let requests = 0;
  const before = counted();
  const start = now();
  await Promise.all(
    sessions.map(async (session) => {
      for (let t = 0; t < scale.turnsPerSession; t++) {
        const began = now();
        const result = await session.prompt(`Turn ${t}: what changed since the last request?`);
        latencies.push(now() - began);
        if (result.status !== 'done') throw new Error(`a turn under load ended ${result.status}: ${result.error?.message}`);
        requests += result.requests;
      }
    }),
  );
  const seconds = (now() - start) / 1000;
  const trips = (counted() - before) / requests;
  await Promise.all(sessions.map((s) => s.close()));
  const label = `${instances.length} instances × ${scale.sessionsPerInstance} sessions at once, ${stateIn}`;
  return [
    {
      metric: 'Postgres: throughput',
      case: label,
      median: requests / seconds,
      p99: null,
      unit: 'requests/s',
      target: null,
      met: null,
      note: `(the instances: stores of their own in one process; ${where})`,
    },
    {
      metric: 'Postgres: turn latency under load',
      case: label,
      median: median(latencies),
      p99: p99(latencies),
      unit: 'ms',
      target: null,
      met: null,
      note: '(queued behind the other sessions on 2 cores)',
    },
    { metric: 'Postgres: round trips per request', case: label, median: trips, p99: null, unit: 'statements', target: null, met: null },
  ];
}

async function historyGrowth(
  scale: PostgresLoadScale,
  instance: Instance,
  counted: () => number,
  url: string,
  schema: string,
  where: string,
): Promise<Row[]> {
  const counter = await loadTokenCounter('gpt-4o');
  const rows: Row[] = [];
  // The state in Postgres costs a statement a turn (the tracker); in memory, what remains is
  // what the Postgres store itself costs.
  for (const [stateIn, stateStore] of STATE_IN) {
    const medians: number[] = [];
    for (const size of scale.historySizes) {
      const state = stateStore();
      const options = {
        llm: zeroLatencyModel(),
        home: instance.home,
        store: instance.store,
        env: {},
        trace: false,
        ...(state ? { stateStore: state } : {}),
      };
      const created = await createSession({ ...options, cwd: '/bench' });
      const id = created.id;
      await created.close();
      await fillLog(url, schema, id, size, counter, instance.store);
      const session = await openSession(id, { ...options, settings: { injectHistory: true } });
      for (let i = 0; i < scale.warmup; i++) await session.prompt(`warm-up ${i}`);
      const times: number[] = [];
      const before = counted();
      const cpu = process.cpuUsage();
      for (let i = 0; i < scale.samples; i++) {
        const start = now();
        await session.prompt(`Question ${i}: what changed since the last request?`);
        times.push(now() - start);
      }
      const used = process.cpuUsage(cpu);
      const cpuMs = (used.user + used.system) / 1000 / scale.samples;
      const trips = (counted() - before) / scale.samples;
      await session.close();
      medians.push(median(times));
      rows.push({
        metric: 'Postgres: orchestration overhead per request',
        case: `${sizeLabel(size)} messages in the log, ${stateIn}`,
        median: median(times),
        p99: p99(times),
        unit: 'ms',
        target: 'median ≤ 3 ms',
        met: median(times) <= 3,
        note: `(${where}; ${trips.toFixed(1)} round trips and ${cpuMs.toFixed(2)} ms of this process's CPU a request)`,
      });
    }
    const ratio = medians.at(-1)! / medians[0]!;
    rows.push({
      metric: 'Postgres: overhead ratio',
      case: `${sizeLabel(scale.historySizes.at(-1)!)} / ${sizeLabel(scale.historySizes[0]!)} messages, ${stateIn}`,
      median: ratio,
      p99: null,
      unit: '×',
      target: '≤ 1.5',
      met: ratio <= 1.5,
    });
  }
  return rows;
}

const sizeLabel = (size: number): string => (size >= 1000 ? `${size / 1000}k` : String(size));

/**
 * `messages` messages (user/assistant turns) written straight into the entries table; past
 * a few hundred the older ones are replaced by one compaction, as a long session's would be
 * (the same log the file-store overhead bench builds).
 */
async function fillLog(
  url: string,
  schema: string,
  id: string,
  messages: number,
  counter: TokenCounter,
  store: SessionStore,
): Promise<void> {
  // After whatever creating the session logged.
  const base = await withClient(url, async (client) =>
    Number(
      (await client.query<{ n: string }>(`SELECT coalesce(max(seq), 0) AS n FROM ${schema}.entries WHERE session_id = $1`, [id])).rows[0]!
        .n,
    ),
  );
  const bodies = longHistoryEntries(messages, base, counter);
  if (bodies.length > messages) {
    const storage = await store.open(id);
    await storage.memory.write(LONG_HISTORY_ARCHIVE, '# Archived conversation\n');
    await storage.close();
  }
  await withClient(url, (client) =>
    client.query(`INSERT INTO ${schema}.entries (session_id, seq, body) SELECT $1, s, b FROM unnest($2::bigint[], $3::text[]) AS t(s, b)`, [
      id,
      bodies.map((_, i) => base + i + 1),
      bodies,
    ]),
  );
}

async function serverVersion(url: string): Promise<string> {
  return withClient(
    url,
    async (client) => (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version.split(' ')[0]!,
  );
}

async function dropSchema(url: string, schema: string): Promise<void> {
  await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
