/**
 * Many sessions at once in one process (issue 39): 1, 10, 100 and 1,000 sessions driven
 * together, each its own conversation, through one `workmem serve` process (the built CLI,
 * its clients and the upstream in this process) and through one process embedding
 * Sessions (this one), against a model that answers at once, on the file store on a tmpfs
 * and on the disk, and on PostgreSQL. Each cell: turns per second; the p50/p99 time
 * workmem adds to a request (embedded: the whole turn, the model taking no time; serve: the
 * request through the proxy less the same clients' requests straight to the upstream at the
 * same concurrency); the event loop's delay p99 in the process that runs the sessions
 * (`monitorEventLoopDelay`, 1 ms resolution); fdatasync calls per turn and, where the kernel
 * says (/sys/dev/block), the disk's cache flushes per turn (the syncs it shared); heap per
 * open session. The same run measures the disk's own fdatasync rate (one file, one loop)
 * and a 20,001-message conversation sent to workmem serve for the first time, with another
 * session's request beside it (its model in a process of its own, as a hosted one is).
 */
import { spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Session, SessionOptions } from '../../src/session/index.js';
import type { PostgresStoreOptions } from '../../src/storage/postgres/postgresStore.js';
import type { SessionStore } from '../../src/storage/sessionStore.js';
import { TOKEN_HEADER } from '../../src/serve/proxyDoors.js';
import { startTestServer, type TestServer } from '../../src/testing/index.js';
import { builtFile } from '../reliability/built.js';
import { postgresBin, startPostgres, type PostgresServer } from '../storage/postgresServer.js';
import { zeroLatencyModel } from './benchmarks.js';
import { BENCH_TOKEN, startServe } from './proxyBench.js';
import { machine, median, now, quantile, type Row } from './harness.js';

export type Door = 'serve' | 'embedded';

/** The code under test: a built checkout (this one, or another given to compare with, alternated cell by cell). */
export interface Code {
  label: string;
  root: string;
}

/** This checkout (its build found when first asked for). */
export function thisCode(): Code {
  return { label: THIS, root: builtFile('src/cli/bin.js').replace(/\/dist\/src\/cli\/bin\.js$/, '') };
}
const THIS = 'new';

/** A module of a checkout's build. */
const built = (code: Code, path: string): Promise<unknown> => import(pathToFileURL(join(code.root, 'dist', path)).href);
export type Where = 'tmpfs' | 'disk' | 'postgres';

export interface ConcurrentScale {
  sessions: number[];
  /** Turns measured per cell, spread over its sessions (at least `minTurns` each). */
  turns: number;
  minTurns: number;
  /** Turns per session before measuring (the first creates the session). */
  warmupTurns: number;
  doors: Door[];
  stores: Where[];
  /** How long the disk's own fdatasync loop runs. */
  syncProbeMs: number;
  /** The long first request's messages (0: not run). */
  longMessages: number;
}

export const CONCURRENT_FULL: ConcurrentScale = {
  sessions: [1, 10, 100, 1000],
  turns: 1000,
  minTurns: 3,
  warmupTurns: 2,
  doors: ['embedded', 'serve'],
  stores: ['tmpfs', 'disk', 'postgres'],
  syncProbeMs: 3000,
  longMessages: 20_001,
};

export const CONCURRENT_SMOKE: ConcurrentScale = {
  sessions: [1, 3],
  turns: 12,
  minTurns: 2,
  warmupTurns: 1,
  doors: ['embedded', 'serve'],
  stores: ['tmpfs'],
  syncProbeMs: 100,
  longMessages: 401,
};

export interface Cell {
  code: string;
  door: Door;
  where: Where;
  sessions: number;
  turns: number;
  turnsPerSecond: number;
  /** Time workmem adds per request, ms. */
  addedP50: number;
  addedP99: number;
  delayP50: number;
  delayP99: number;
  delayMax: number;
  syncsPerTurn: number | null;
  flushesPerTurn: number | null;
  heapPerSessionKB: number | null;
  /** CPU of the process that runs the sessions, as a share of one core. */
  cpu: number;
  /** The loop delay p99 of an idle process on the machine meanwhile: what the machine's load alone causes. */
  idleDelayP99: number;
}

export interface ConcurrentResult {
  machine: string;
  load: number[];
  syncRate: { perSecond: number; flushesPerSync: number | null } | null;
  cells: Cell[];
  long: {
    code: string;
    messages: number;
    where: Where;
    aloneMs: number;
    besideMaxMs: number;
    besideMedianMs: number;
    requests: number;
    longMs: number;
  }[];
}

const ANSWER = 'Noted, thank you.';
const gc = (globalThis as { gc?: () => void }).gc;

export async function concurrentBench(
  scale: ConcurrentScale,
  log: (line: string) => void = () => {},
  codes: Code[] = [thisCode()],
): Promise<ConcurrentResult> {
  const load = [loadavg()[0]!];
  const result: ConcurrentResult = { machine: machine(), load, syncRate: null, cells: [], long: [] };
  if (scale.stores.includes('disk')) result.syncRate = fdatasyncRate(scale.syncProbeMs);
  let postgres: PostgresServer | null = null;
  const bin = scale.stores.includes('postgres') ? postgresBin() : null;
  if (bin) postgres = await startPostgres(bin, { fsync: true });
  else if (scale.stores.includes('postgres')) log('bench: PostgreSQL not found: its cells are skipped');
  const idle = idleProcess();
  try {
    for (const where of scale.stores) {
      if (where === 'postgres' && !postgres) continue;
      for (const door of scale.doors)
        for (const n of scale.sessions) {
          for (const code of codes) {
            await idle.ask('reset');
            const measured =
              door === 'embedded'
                ? await embeddedCell(code, where, n, scale, postgres?.url)
                : await serveCell(code, where, n, scale, postgres?.url);
            const cell: Cell = { code: code.label, ...measured, idleDelayP99: (await idle.ask<{ p99: number }>('report')).p99 };
            log(
              `bench: ${code.label} ${door} ${where} ${n}: ${cell.turnsPerSecond.toFixed(0)} turns/s, delay p99 ${cell.delayP99.toFixed(2)} ms`,
            );
            result.cells.push(cell);
          }
        }
    }
    if (scale.longMessages)
      for (const where of ['tmpfs', 'disk'] as const)
        if (scale.stores.includes(where))
          for (const code of codes) result.long.push({ code: code.label, ...(await longFirstRequest(code, where, scale.longMessages)) });
  } finally {
    idle.stop();
    await postgres?.stop();
  }
  load.push(loadavg()[0]!);
  return result;
}

/** A process that does nothing but measure its own event loop's delay: the machine's share of every figure. */
function idleProcess(): { ask<T>(what: 'reset' | 'report'): Promise<T>; stop(): void } {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const h = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 1 }); h.enable();
       process.on('message', (m) => { if (m === 'reset') { h.reset(); process.send({}); } else process.send({ p99: h.percentile(99) / 1e6 }); });`,
    ],
    { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] },
  );
  return {
    ask: <T>(what: 'reset' | 'report') =>
      new Promise<T>((resolve) => {
        child.once('message', (answer) => resolve(answer as T));
        child.send(what);
      }),
    stop: () => void child.kill(),
  };
}

/** Turns each session runs, measured. */
const turnsEach = (scale: ConcurrentScale, n: number): number => Math.max(scale.minTurns, Math.ceil(scale.turns / n));

function scratch(where: Where): string {
  return mkdtempSync(join(where === 'tmpfs' ? '/dev/shm' : tmpdir(), 'workmem-bench-many-'));
}

/** The disk's own rate: one file, append a line and fdatasync it, in a loop on this thread. */
function fdatasyncRate(ms: number): { perSecond: number; flushesPerSync: number | null } {
  const dir = scratch('disk');
  const fd = openSync(join(dir, 'probe'), 'a');
  const line = Buffer.from(`${'x'.repeat(200)}\n`);
  const flushes = deviceFlushes(dir);
  let n = 0;
  const end = now() + ms;
  const start = now();
  while (now() < end) {
    writeSync(fd, line);
    fdatasyncSync(fd);
    n++;
  }
  const seconds = (now() - start) / 1000;
  closeSync(fd);
  const flushed = flushes();
  rmSync(dir, { recursive: true, force: true });
  return { perSecond: n / seconds, flushesPerSync: flushed === null ? null : flushed / n };
}

/**
 * The cache flushes the disk under `dir` has completed since this was called (the 17th field
 * of /sys/dev/block/<major:minor>/stat), or null where the kernel does not say. The whole
 * disk's: other processes' flushes count too.
 */
function deviceFlushes(dir: string): () => number | null {
  const dev = statSync(dir).dev;
  const file = `/sys/dev/block/${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}/stat`;
  const read = (): number | null => {
    try {
      const field = readFileSync(file, 'utf8').trim().split(/\s+/)[15];
      return field === undefined ? null : Number(field);
    } catch {
      return null;
    }
  };
  const before = read();
  return () => {
    const after = read();
    return before === null || after === null ? null : after - before;
  };
}

async function embeddedCell(
  code: Code,
  where: Where,
  n: number,
  scale: ConcurrentScale,
  url: string | undefined,
): Promise<Omit<Cell, 'idleDelayP99' | 'code'>> {
  const { createSession } = (await built(code, 'src/session/index.js')) as { createSession(options: SessionOptions): Promise<Session> };
  const { postgresStore } = (await built(code, 'src/storage/postgres/postgresStore.js')) as {
    postgresStore(options: PostgresStoreOptions): SessionStore;
  };
  const home = scratch(where);
  const schema = `workmem_many_${randomBytes(4).toString('hex')}`;
  const store: SessionStore | undefined =
    where === 'postgres' ? postgresStore({ connectionString: url!, schema, maxConnections: 20 }) : undefined;
  const common = { llm: zeroLatencyModel(), home, cwd: '/bench', env: {}, ...(store ? { store } : {}) };
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const sessions: Session[] = [];
  for (let i = 0; i < n; i += 50)
    sessions.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => createSession(common)))));
  const turns = turnsEach(scale, n);
  await Promise.all(
    sessions.map(async (s, i) => {
      for (let t = 0; t < scale.warmupTurns; t++) await s.prompt(`Warm-up ${t} of session ${i}.`);
    }),
  );
  gc?.();
  const heapPerSessionKB = (process.memoryUsage().heapUsed - heapBefore) / n / 1024;
  const syncs = () => sessions.reduce((sum, s) => sum + (s.record.storage.log.syncs ?? 0), 0);
  const syncsBefore = syncs();
  const flushes = where === 'disk' ? deviceFlushes(home) : () => null;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const cpuBefore = process.cpuUsage();
  delay.enable();
  const latencies: number[] = [];
  const start = now();
  await Promise.all(
    sessions.map(async (s, i) => {
      for (let t = 0; t < turns; t++) {
        const began = now();
        await s.prompt(`Question ${t} of session ${i}: what changed since the last one?`);
        latencies.push(now() - began);
      }
    }),
  );
  const wall = now() - start;
  delay.disable();
  const cpu = process.cpuUsage(cpuBefore);
  const done = n * turns;
  const flushed = flushes();
  const cell: Omit<Cell, 'idleDelayP99' | 'code'> = {
    door: 'embedded',
    where,
    sessions: n,
    turns: done,
    turnsPerSecond: done / (wall / 1000),
    addedP50: median(latencies),
    addedP99: quantile(latencies, 0.99),
    // A loop that never turned while the turns ran (code that never yields) has no samples: its delay was the whole run.
    delayP50: delay.count ? delay.percentile(50) / 1e6 : wall,
    delayP99: delay.count ? delay.percentile(99) / 1e6 : wall,
    delayMax: delay.count ? delay.max / 1e6 : wall,
    syncsPerTurn: where === 'postgres' ? null : (syncs() - syncsBefore) / done,
    flushesPerTurn: flushed === null ? null : flushed / done,
    heapPerSessionKB,
    cpu: (cpu.user + cpu.system) / 1000 / wall,
  };
  for (let i = 0; i < sessions.length; i += 100) await Promise.all(sessions.slice(i, i + 100).map((s) => s.close()));
  await store?.close();
  rmSync(home, { recursive: true, force: true });
  return cell;
}

/** A `workmem serve` of the build, watched by serveMonitor.ts over IPC. */
interface Served {
  url: string;
  ask<T>(what: 'reset' | 'report' | 'heap'): Promise<T>;
  stop(): Promise<void>;
}

async function startMonitoredServe(code: Code, upstream: string, home: string, databaseUrl: string | undefined): Promise<Served> {
  const { url, child, stop } = await startServe(upstream, home, {
    bin: join(code.root, 'dist/src/cli/bin.js'),
    node: ['--expose-gc', '--import', builtFile('test/bench/serveMonitor.js')],
    args: ['--keep-open', '600000', ...(databaseUrl ? ['--database-url', databaseUrl] : [])],
    env: { WORKMEM_BENCH_DISK_IO: join(code.root, 'dist/src/storage/diskIO.js') },
    ipc: true,
  });
  return {
    url,
    ask: <T>(what: 'reset' | 'report' | 'heap') =>
      new Promise<T>((resolve) => {
        child.once('message', (answer) => resolve(answer as T));
        child.send({ ask: what });
      }),
    stop,
  };
}

type WireMessage = { role: 'user' | 'assistant'; content: string };

/**
 * One streamed Chat Completions request: the answer's text, and how long it took. A request
 * sent on a kept-alive socket the server had just closed (its idle timeout, on a loaded
 * machine) never reached it: it is sent once more.
 */
async function chat(agent: Agent, base: string, session: string, messages: readonly WireMessage[]): Promise<{ text: string; ms: number }> {
  try {
    return await chatOnce(agent, base, session, messages);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') throw error;
    return chatOnce(agent, base, session, messages);
  }
}

function chatOnce(agent: Agent, base: string, session: string, messages: readonly WireMessage[]): Promise<{ text: string; ms: number }> {
  const body = JSON.stringify({ model: 'gpt-4o', messages, stream: true });
  const url = new URL(`${base}/chat/completions`);
  const began = now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        // The bench's serve token (the upstream, asked straight, ignores it).
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-workmem-session': session,
          [TOKEN_HEADER]: BENCH_TOKEN,
        },
      },
      (res) => {
        let raw = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (raw += chunk));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`${res.statusCode}: ${raw.slice(0, 300)}`));
          let text = '';
          for (const line of raw.split('\n')) {
            if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
            text += (JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content ?? '';
          }
          resolve({ text, ms: now() - began });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `n` conversations, each `turns` requests in a row, all at once: every request's time. */
async function drive(agent: Agent, base: string, names: string[], talks: WireMessage[][], turns: number, label: string): Promise<number[]> {
  const times: number[] = [];
  await Promise.all(
    names.map(async (name, i) => {
      const talk = talks[i]!;
      for (let t = 0; t < turns; t++) {
        talk.push({ role: 'user', content: `${label} ${t} of ${name}: what changed since the last one?` });
        const { text, ms } = await chat(agent, base, name, talk);
        talk.push({ role: 'assistant', content: text });
        times.push(ms);
      }
    }),
  );
  return times;
}

/** The same model in a process of its own (upstreamChild.ts). */
async function upstreamProcess(): Promise<{ baseURL: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, [builtFile('test/bench/upstreamChild.js'), ANSWER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin.on('error', () => {}); // a child that died: its exit says so
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`the upstream process exited (${code}) before it listened`)));
  });
  return {
    baseURL: line,
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

async function upstreamServer(): Promise<TestServer> {
  return startTestServer({ policy: () => ({ content: ANSWER }), promptCaching: 'off', chunkChars: 64, reportUsage: false });
}

async function serveCell(
  code: Code,
  where: Where,
  n: number,
  scale: ConcurrentScale,
  url: string | undefined,
): Promise<Omit<Cell, 'idleDelayP99' | 'code'>> {
  const home = scratch(where);
  const upstream = await upstreamServer();
  const databaseUrl = where === 'postgres' ? await freshDatabase(url!) : undefined;
  const served = await startMonitoredServe(code, upstream.baseURL, home, databaseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    const names = Array.from({ length: n }, (_, i) => `bench-${where}-${n}-${i}`);
    const turns = turnsEach(scale, n);
    // The same clients straight to the upstream: what a request costs without workmem.
    const direct = await drive(
      agent,
      upstream.baseURL,
      names,
      names.map(() => []),
      turns,
      'Direct',
    );
    const talks: WireMessage[][] = names.map(() => []);
    const heapBefore = await served.ask<{ heapUsed: number }>('heap');
    await drive(agent, served.url, names, talks, scale.warmupTurns, 'Warm-up');
    const heapAfter = await served.ask<{ heapUsed: number }>('heap');
    const flushes = where === 'disk' ? deviceFlushes(home) : () => null;
    await served.ask('reset');
    const start = now();
    const times = await drive(agent, served.url, names, talks, turns, 'Question');
    const wall = now() - start;
    const report = await served.ask<{ delayP50: number; delayP99: number; delayMax: number; syncs: number; cpuMs: number; wallMs: number }>(
      'report',
    );
    const flushed = flushes();
    const done = n * turns;
    return {
      door: 'serve',
      where,
      sessions: n,
      turns: done,
      turnsPerSecond: done / (wall / 1000),
      addedP50: median(times) - median(direct),
      addedP99: quantile(times, 0.99) - quantile(direct, 0.99),
      delayP50: report.delayP50,
      delayP99: report.delayP99,
      delayMax: report.delayMax,
      // A checkout without DiskIO counts no syncs in the process (NaN, null once sent over IPC).
      syncsPerTurn: where === 'postgres' || typeof report.syncs !== 'number' || Number.isNaN(report.syncs) ? null : report.syncs / done,
      flushesPerTurn: flushed === null ? null : flushed / done,
      heapPerSessionKB: (heapAfter.heapUsed - heapBefore.heapUsed) / n / 1024,
      cpu: report.cpuMs / report.wallMs,
    };
  } finally {
    agent.destroy();
    await served.stop();
    await upstream.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** A database of its own on the bench's server, so that each serve cell starts from an empty one. */
async function freshDatabase(url: string): Promise<string> {
  const { default: pg } = await import('pg');
  const name = `workmem_many_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const at = new URL(url);
  at.pathname = `/${name}`;
  return at.toString();
}

/**
 * A conversation of `messages` messages (2.6 MB at 20,001) sent to workmem serve for the
 * first time, and meanwhile another session's short requests, one after another: how much
 * longer they take than alone.
 */
async function longFirstRequest(
  code: Code,
  where: 'tmpfs' | 'disk',
  messages: number,
): Promise<Omit<ConcurrentResult['long'][number], 'code'>> {
  const home = scratch(where);
  // Out of this process, as a hosted model is: parsing the long conversation's prompt would hold the client beside it.
  const upstream = await upstreamProcess();
  let served: Awaited<ReturnType<typeof startMonitoredServe>> | null = null;
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    served = await startMonitoredServe(code, upstream.baseURL, home, undefined);
    const url = served.url;
    const small: WireMessage[] = [];
    const ask = async (): Promise<number> => {
      small.push({ role: 'user', content: `Short question ${small.length}.` });
      const { text, ms } = await chat(agent, url, 'beside', small);
      small.push({ role: 'assistant', content: text });
      return ms;
    };
    for (let i = 0; i < 10; i++) await ask();
    const alone: number[] = [];
    for (let i = 0; i < 20; i++) alone.push(await ask());
    const long: WireMessage[] = [];
    for (let i = 0; i < messages - 1; i++)
      long.push(
        i % 2
          ? { role: 'assistant', content: `Answer ${i}: ${'the figures we agreed on stay as they were, '.repeat(2)}` }
          : { role: 'user', content: `Question ${i}: ${'what about the plan we discussed earlier today, '.repeat(2)}` },
      );
    long.push({ role: 'user', content: 'And now, what is left to do?' });
    let done = false;
    const longStart = now();
    const first = chat(agent, url, 'long', long).finally(() => (done = true));
    const beside: number[] = [];
    while (!done) beside.push(await ask());
    const longMs = (await first).ms;
    return {
      messages,
      where,
      aloneMs: median(alone),
      besideMaxMs: Math.max(...beside),
      besideMedianMs: median(beside),
      requests: beside.length,
      longMs: longMs || now() - longStart,
    };
  } finally {
    agent.destroy();
    try {
      await served?.stop();
    } finally {
      await upstream.close();
      rmSync(home, { recursive: true, force: true });
    }
  }
}

const fmt = (value: number | null, digits = 2): string => (value === null || Number.isNaN(value) ? '—' : value.toFixed(digits));

/** The table of cells, and the targets as rows (issue 39's, same-run ratios). */
export function concurrentReport(result: ConcurrentResult): { table: string; rows: Row[] } {
  const lines = [
    "| code | door | store | sessions | turns/s | added p50 | added p99 | loop delay p50 / p99 / max | an idle process's p99 | fdatasync per turn | disk flushes per turn | heap per session | CPU |",
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of result.cells)
    lines.push(
      `| ${c.code} | ${c.door} | ${c.where} | ${c.sessions.toLocaleString('en-US')} | ${c.turnsPerSecond.toFixed(0)} | ${fmt(c.addedP50)} ms | ${fmt(c.addedP99)} ms | ${fmt(c.delayP50)} / ${fmt(c.delayP99)} / ${fmt(c.delayMax, 1)} ms | ${fmt(c.idleDelayP99)} ms | ${fmt(c.syncsPerTurn)} | ${fmt(c.flushesPerTurn)} | ${fmt(c.heapPerSessionKB, 1)} KB | ${(c.cpu * 100).toFixed(0)} % |`,
    );
  const rows: Row[] = [];
  const at = (door: Door, where: Where, n: number) =>
    result.cells.find((c) => c.code === THIS && c.door === door && c.where === where && c.sessions === n);
  for (const door of ['embedded', 'serve'] as const) {
    const hundred = at(door, 'disk', 100);
    const one = at(door, 'disk', 1);
    if (hundred) {
      rows.push({
        metric: `Concurrent sessions, ${door}: event-loop delay`,
        case: '100 sessions at once, disk',
        median: hundred.delayP50,
        p99: hundred.delayP99,
        unit: 'ms',
        target: 'p99 ≤ 2 ms',
        met: hundred.delayP99 <= 2,
        note: `(an idle process on the machine meanwhile: p99 ${hundred.idleDelayP99.toFixed(2)} ms)`,
      });
      if (one)
        rows.push({
          metric: `Concurrent sessions, ${door}: throughput`,
          case: '100 sessions at once ÷ one session, disk',
          median: hundred.turnsPerSecond / one.turnsPerSecond,
          p99: null,
          unit: '×',
          target: '≥ 5 ×',
          met: hundred.turnsPerSecond / one.turnsPerSecond >= 5,
          note: `(${hundred.turnsPerSecond.toFixed(0)} and ${one.turnsPerSecond.toFixed(0)} turns/s)`,
        });
      const rate = result.syncRate?.perSecond;
      if (rate) {
        // Turns per shared sync: per disk flush where the kernel counts them, else per fdatasync.
        const per = hundred.flushesPerTurn ? 1 / hundred.flushesPerTurn : hundred.syncsPerTurn ? 1 / hundred.syncsPerTurn : null;
        if (per) {
          const ceiling = rate * per;
          rows.push({
            metric: `Concurrent sessions, ${door}: throughput against the disk's ceiling`,
            case: '100 sessions at once, disk: turns/s ÷ (fdatasync rate × turns per shared sync)',
            median: (100 * hundred.turnsPerSecond) / ceiling,
            p99: null,
            unit: '%',
            target: '≥ 50 %',
            met: hundred.turnsPerSecond >= ceiling / 2,
            note: `(${hundred.turnsPerSecond.toFixed(0)} turns/s; ${rate.toFixed(0)} fdatasync/s × ${per.toFixed(2)} turns per ${hundred.flushesPerTurn ? 'disk flush' : 'fdatasync'})`,
          });
        }
      }
    }
  }
  for (const long of result.long)
    rows.push({
      metric: `A ${long.messages.toLocaleString('en-US')}-message first request: another session's request beside it`,
      case: `workmem serve${long.code === THIS ? '' : ` (${long.code})`}, ${long.where}: its slowest, less its median alone`,
      median: long.besideMaxMs - long.aloneMs,
      p99: null,
      unit: 'ms',
      target: long.messages >= 20_000 && long.code === THIS ? '≤ 50 ms' : null,
      met: long.messages >= 20_000 && long.code === THIS ? long.besideMaxMs - long.aloneMs <= 50 : null,
      note: `(alone ${long.aloneMs.toFixed(1)} ms, beside it median ${long.besideMedianMs.toFixed(1)} ms over ${long.requests} requests; the long request ${long.longMs.toFixed(0)} ms)`,
    });
  const sync = result.syncRate;
  const head = [
    `${result.machine}; load average ${result.load.map((l) => l.toFixed(1)).join(' → ')}`,
    sync
      ? `The disk's own rate, one file in a loop: ${sync.perSecond.toFixed(0)} fdatasync/s${sync.flushesPerSync === null ? '' : ` (${sync.flushesPerSync.toFixed(2)} disk flushes each)`}.`
      : '',
  ].filter(Boolean);
  return { table: `${head.join('\n')}\n\n${lines.join('\n')}`, rows };
}
