/**
 * The benchmark code at tiny sizes (SMOKE), so that `npm run bench` cannot rot. Figures
 * at these sizes mean nothing and no target is asserted; what is checked is that every
 * benchmark runs, yields well-formed rows, and that the table says "missed" exactly
 * where a target was missed.
 */
import { describe, expect, it } from 'vitest';
import {
  cliStart,
  itemMemory,
  orchestrationAsTheCliRuns,
  orchestrationOverhead,
  resume,
  SMOKE,
  throughput,
  tokenEfficiency,
  traceCost,
} from './benchmarks.js';
import { median, p99, quantile, table, type Row } from './harness.js';
import { cacheEconomics } from './cacheEconomics.js';
import { BACKGROUND_SMOKE, backgroundCompaction, backgroundThresholds } from './backgroundBench.js';
import { hostLoopOverhead } from './hostLoopBench.js';
import { CONCURRENT_SMOKE, concurrentBench, concurrentReport } from './concurrentBench.js';
import { langchainAgentState } from './langchainState.js';
import { PG_LOAD_SMOKE, postgresLoad } from './postgresLoad.js';
import { allocation } from './allocation.js';
import { peerRows } from './peerRows.js';
import { proxyOverhead } from './proxyBench.js';
import { tokenCountAfterCollections } from './tokenCount.js';
import { postgresAvailable } from '../storage/postgresServer.js';

function wellFormed(rows: Row[]): void {
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row.metric.length, JSON.stringify(row)).toBeGreaterThan(0);
    expect(row.unit.length).toBeGreaterThan(0);
    expect(Number.isFinite(row.median), `${row.metric} / ${row.case}: median ${row.median}`).toBe(true);
    if (row.p99 !== null) expect(Number.isFinite(row.p99)).toBe(true);
    // A target comes with a verdict, and a verdict with a target.
    expect(row.target === null).toBe(row.met === null);
  }
}

describe('benchmarks (smoke sizes)', () => {
  it('background compaction: the three sessions and the thresholds run and report', async () => {
    const rows = await backgroundCompaction(BACKGROUND_SMOKE);
    wellFormed(rows);
    expect(rows.map((r) => r.case)).toEqual([
      '40 turns, never compacts',
      '40 turns, before: the fallback summarises when it compacts',
      '40 turns, after: summary prepared in the background (default)',
      'before (the fallback waits for its summary)',
      'after (prepared in the background)',
      'answers and summaries',
    ]);
    // The session that compacts does so in both runs; the one that never does, never.
    expect(rows[0]!.note).toMatch(/compactions: none/);
    expect(rows[1]!.note).toMatch(/compactions: fallback \d/);
    expect(rows[2]!.note).toMatch(/compactions: (background|fallback) \d/);
    const thresholds = await backgroundThresholds({ ...BACKGROUND_SMOKE, turns: 15 }, [0.5, 0.7]);
    wellFormed(thresholds);
    expect(thresholds).toHaveLength(2);
  });

  it('allocation per request and the LangGraph.js peer run and report', async () => {
    const allocated = allocation([100], 3, 10, { warmup: 3, samples: 10 });
    wellFormed(allocated);
    expect(allocated.map((r) => r.metric)).toEqual([
      'Allocated per request',
      'Kept by scavenges per request',
      'Kept by scavenges per request, V8 pretenuring off',
      'Allocated per request, xstate alone',
      'Allocated per request, xstate alone',
    ]);
    expect(allocated[0]!.median).toBeGreaterThan(10); // KB: a request allocates something
    // The floor's chart is the one a Session's request goes through: the same actors and transitions.
    const shape = / (\d+ actors, \d+ transitions) a request/;
    expect(shape.exec(allocated[3]!.note!)?.[1]).toBe('5 actors, 10 transitions');
    expect(shape.exec(allocated[0]!.note!)?.[1]).toBe('5 actors, 10 transitions');
    expect(shape.exec(allocated[4]!.note!)?.[1]).toBe('3 actors, 7 transitions');
    const peer = await peerRows([100]);
    wellFormed(peer);
    expect(peer.map((r) => r.metric)).toEqual(['Peer: LangGraph.js 1.7.3, MemorySaver, per request', 'workmem vs the peer, per request']);
  });

  it('a token count after major collections, workmem beside gpt-tokenizer, runs and reports', () => {
    const rows = tokenCountAfterCollections(2, 1);
    wellFormed(rows);
    expect(rows.map((r) => r.metric)).toEqual(['Token count, workmem', "Token count, gpt-tokenizer's countTokens"]);
    for (const row of rows) expect(row.median).toBeGreaterThan(0);
  });

  it('order statistics: median, p99 and quantiles of known samples', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted
    expect(median(samples)).toBe(51);
    expect(p99(samples)).toBe(100);
    expect(quantile(samples, 0.1)).toBe(11);
    expect(median([])).toBeNaN();
    expect(samples[0]).toBe(100); // not sorted in place
  });

  it('the table marks missed targets and only those', () => {
    const rows: Row[] = [
      { metric: 'A', case: 'x', median: 0.5, p99: 2, unit: 'ms', target: '≤ 1 ms', met: true },
      { metric: 'B', case: 'y', median: 5, p99: null, unit: 'ms', target: '≤ 1 ms', met: false },
      { metric: 'C', case: 'z', median: 1234.5, p99: null, unit: 'turns/s', target: null, met: null },
    ];
    const lines = table(rows).split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[2]).toBe('| A | x | 0.5 ms | 2 ms | ≤ 1 ms | met |');
    expect(lines[3]).toBe('| B | y | 5 ms | — | ≤ 1 ms | **missed** |');
    expect(lines[4]).toBe('| C | z | 1,235 turns/s | — |  |  |');
  });

  it('orchestration overhead, resume and the trace cost run and report per size', async () => {
    const overhead = await orchestrationOverhead(SMOKE);
    wellFormed(overhead);
    expect(overhead.map((r) => r.case)).toEqual([
      '100 messages in the log, tmpfs',
      '400 messages in the log, tmpfs',
      '100 messages in the log, disk',
      '400 messages in the log, disk',
      '400 / 100 messages (tmpfs)',
    ]);
    // The log's durability is counted per turn: two syncs on disk, none on tmpfs' log either (the same calls, a cheap fs).
    for (const row of overhead.slice(0, 4)) expect(row.note).toMatch(/^\(2\.00 syncs per turn/);
    const asTheCli = orchestrationAsTheCliRuns(SMOKE);
    wellFormed(asTheCli);
    expect(asTheCli.map((r) => r.case)).toEqual(['400 messages in the log, tmpfs', '400 messages in the log, disk']);
    const resumed = await resume(SMOKE);
    wellFormed(resumed);
    expect(resumed.map((r) => r.metric)).toEqual(['Resume (openSession → first prompt built)', 'Resume, from a new process']);
    const trace = await traceCost(SMOKE);
    wellFormed(trace);
    expect(trace.at(-1)!.median).toBeCloseTo((trace[0]!.median! / trace[1]!.median! - 1) * 100, 6);
  });

  it("a host loop's cost per model call: the core, and the AI SDK and LangChain middleware beside a Session", async () => {
    const rows = await hostLoopOverhead(SMOKE);
    wellFormed(rows);
    expect(rows.map((r) => r.metric)).toEqual(
      [100, 400].flatMap(() => [
        'Per model call, Session (own loop)',
        'Per model call, HostLoop core',
        'Per model call, AI SDK middleware added',
        'Per model call, LangChain middleware added',
      ]),
    );
    // The first ratio is a difference of two framework calls' medians: at these sizes it may come out below zero.
    expect(rows.at(-1)!.note).toMatch(
      /^\(-?\d+\.\d\d × Session's \d+\.\d\d ms in the same phase; its own work inside the call \d+\.\d\d ms, \d+\.\d\d ×; invoke alone \d+\.\d\d ms\)$/,
    );
    expect(rows.at(-2)!.note).toMatch(/its own work inside the call \d+\.\d\d ms, \d+\.\d\d ×; generateText alone/);
  });

  it('throughput and heap per idle session', async () => {
    const rows = await throughput(SMOKE);
    wellFormed(rows);
    for (const row of rows.filter((r) => r.unit !== 'KB')) expect(row.median).toBeGreaterThan(0);
    // Five idle sessions weigh less than the heap's noise after a GC: at smoke size the heap
    // row only has to be a number (npm run bench measures 200 sessions).
    const heap = rows.find((r) => r.metric === 'Heap per idle session');
    expect(Number.isFinite(heap?.median)).toBe(true);
  });

  it('token efficiency: the full-history baseline answers every late question, and auto sends fewer tokens', async () => {
    const rows = await tokenEfficiency(SMOKE);
    wellFormed(rows);
    const [full, , auto] = rows;
    expect(full!.note).toMatch(/late questions right: (\d+)\/\1$/);
    expect(full!.note).not.toMatch(/right: 0\/0/);
    const share = rows.find((r) => r.metric.startsWith('Total prompt tokens'))!;
    expect(share.median).toBeGreaterThan(0);
    expect(share.median).toBeLessThan(100);
    expect(auto!.median).toBeLessThan(full!.median!);
    for (const row of rows.filter((r) => r.metric.startsWith('Prefix stability'))) {
      expect(row.median).toBeGreaterThan(0);
      expect(row.median).toBeLessThanOrEqual(100);
    }
  });

  it('the proxy overhead: workmem serve beside a Session, first text and whole answer', async () => {
    const rows = await proxyOverhead(SMOKE);
    wellFormed(rows);
    expect(rows.filter((r) => r.target !== null).map((r) => r.case)).toEqual(['400 messages in the log, first streamed text']);
  });

  it('many sessions at once: embedded and through workmem serve, with a long first request beside another', async () => {
    const result = await concurrentBench(CONCURRENT_SMOKE);
    expect(result.cells.map((c) => `${c.door} ${c.where} ${c.sessions}`)).toEqual([
      'embedded tmpfs 1',
      'embedded tmpfs 3',
      'serve tmpfs 1',
      'serve tmpfs 3',
    ]);
    for (const cell of result.cells) {
      expect(cell.turns).toBeGreaterThanOrEqual(cell.sessions * CONCURRENT_SMOKE.minTurns);
      expect(cell.syncsPerTurn, 'the user message and the answer, each synced').toBeGreaterThanOrEqual(1);
      expect(Number.isFinite(cell.delayP99) && Number.isFinite(cell.idleDelayP99)).toBe(true);
    }
    expect(result.long.map((l) => l.requests > 0 && l.longMs > 0)).toEqual([true]);
    const { table, rows } = concurrentReport(result);
    expect(table).toContain('| serve | tmpfs | 3 |');
    wellFormed(rows);
  });

  it("a LangChain agent's state, with workmem's middleware and with summarizationMiddleware", async () => {
    const rows = await langchainAgentState(400, 2, 4);
    wellFormed(rows);
    // What workmem archived left the agent: it holds the 200 kept and what came after them.
    expect(rows[0]!.note).toMatch(/holds (\d+) messages/);
    expect(Number(/holds (\d+) messages/.exec(rows[0]!.note!)![1])).toBeLessThan(400);
  });

  it('CLI start and item memory', async () => {
    const cli = cliStart(SMOKE);
    wellFormed(cli);
    const items = await itemMemory(SMOKE);
    wellFormed(items);
  });

  it('cache economics: workmem with each memoryPosition and the cache-aware settings, and both peers, for both kinds of caching and both prompts, with a verdict on ours only', async () => {
    const rows = await cacheEconomics(12);
    wellFormed(rows);
    const shares = rows.filter((r) => r.metric.startsWith('Cached share'));
    const settings = ['', ', memory after history', ', memory by phase', ', cache-aware (by phase, step 6, fallback to recent turns)'];
    expect(shares.map((r) => `${r.metric.split(', ').slice(2).join(', ')} / ${r.case}`)).toEqual(
      ["workmem's prompt alone", 'in a host agent'].flatMap((prompt) =>
        ['explicit caching', 'automatic caching'].flatMap((c) =>
          [
            ...settings.flatMap((s) => [
              `workmem, phase 1 pinned${s}`,
              `workmem, auto (phase 1 → 2)${s}`,
              `workmem, phase 1 with compactions (32k window)${s}`,
            ]),
            'peer: naive full history',
            'peer: summarise at 75 %',
          ].map((n) => `${c}, ${prompt} / ${n}`),
        ),
      ),
    );
    for (const row of shares) {
      expect(row.median).toBeGreaterThanOrEqual(0);
      expect(row.median).toBeLessThanOrEqual(100);
      expect(row.target !== null).toBe(row.case.startsWith('workmem'));
    }
    // A 12-turn session reuses its prefix: something is cached in phase 1, with either kind of caching.
    expect(shares.filter((r) => r.case.startsWith('workmem, phase 1 pinned')).every((r) => r.median! > 0)).toBe(true);
    // The host's instructions and tools are sent: its first requests are larger.
    const first = (prompt: string) =>
      Number(/first request ([\d,]+) tokens/.exec(shares.find((r) => r.metric.endsWith(prompt))!.note!)![1]!.replace(/,/g, ''));
    expect(first('in a host agent')).toBeGreaterThan(first("workmem's prompt alone") + 1000);
  });
  it.skipIf(!postgresAvailable())(
    'the Postgres load bench: N instances × M sessions, round trips counted, 100 vs 400 messages',
    async () => {
      const rows = await postgresLoad(PG_LOAD_SMOKE);
      wellFormed(rows);
      expect(rows.map((r) => r.metric)).toEqual([
        'Postgres: throughput',
        'Postgres: turn latency under load',
        'Postgres: round trips per request',
        'Postgres: throughput',
        'Postgres: turn latency under load',
        'Postgres: round trips per request',
        'Postgres: orchestration overhead per request',
        'Postgres: orchestration overhead per request',
        'Postgres: overhead ratio',
        'Postgres: orchestration overhead per request',
        'Postgres: orchestration overhead per request',
        'Postgres: overhead ratio',
      ]);
      expect(rows.slice(6).map((r) => r.case)).toEqual([
        '100 messages in the log, state in Postgres',
        '400 messages in the log, state in Postgres',
        '400 / 100 messages, state in Postgres',
        '100 messages in the log, state in memory',
        '400 messages in the log, state in memory',
        '400 / 100 messages, state in memory',
      ]);
      expect(rows[0]!.case).toBe('2 instances × 3 sessions at once, state in Postgres');
      expect(rows[3]!.case).toBe('2 instances × 3 sessions at once, state in memory');
      // Every request reaches the database: at least the user message and the answer are appended.
      expect(rows[2]!.median).toBeGreaterThanOrEqual(2);
      expect(rows[6]!.note).toMatch(/\d+\.\d round trips and \d+\.\d\d ms of this process's CPU a request/);
    },
  );
});
