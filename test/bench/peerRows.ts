/**
 * The peer's rows (langgraphPeer.ts) beside workmem's own, measured in the same run, in
 * turn: workmem's overhead per request (tmpfs, trace off, phase 1: the whole history kept
 * as the peer keeps it) and the peer's, at the same log sizes.
 */
import { rmSync } from 'node:fs';
import { openSession } from '../../src/session/index.js';
import { longSessionIn, zeroLatencyModel } from './benchmarks.js';
import { median, now, p99, type Row } from './harness.js';
import { langgraphTimes } from './langgraphPeer.js';
import { testPostgres } from '../storage/postgresServer.js';

/** Requests timed per size: a request of the peer at 10k messages takes seconds. */
const PEER_SAMPLES = (size: number): number => (size >= 10_000 ? 5 : 40);

async function workmemTimes(size: number, samples: number): Promise<number[]> {
  const { home, id } = await longSessionIn(size, true);
  const session = await openSession(id, { llm: zeroLatencyModel(), home, env: {}, trace: false, settings: { injectHistory: true } });
  for (let i = 0; i < 30; i++) await session.prompt(`warm-up ${i}`);
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = now();
    await session.prompt(`Question ${i}: what changed since the last request?`);
    times.push(now() - start);
  }
  await session.close();
  rmSync(home, { recursive: true, force: true });
  return times;
}

export async function peerRows(sizes: number[], options: { postgres?: boolean } = {}): Promise<Row[]> {
  const server = options.postgres ? await testPostgres() : null;
  if (options.postgres && !server) {
    process.stderr.write('\nbench: no PostgreSQL (no initdb, no WORKMEM_TEST_DATABASE_URL): the peer on PostgreSQL is left out\n');
    return [];
  }
  const rows: Row[] = [];
  try {
    for (const size of sizes) {
      const label = size >= 1000 ? `${size / 1000}k` : String(size);
      const peer = await langgraphTimes(size, 2, PEER_SAMPLES(size), server?.url);
      const where = server ? 'LangGraph.js 1.7.3 + PostgresSaver' : 'LangGraph.js 1.7.3, MemorySaver';
      rows.push({
        metric: `Peer: ${where}, per request`,
        case: `${label} messages in the thread`,
        median: median(peer),
        p99: p99(peer),
        unit: 'ms',
        target: null,
        met: null,
      });
      if (server) continue; // workmem on PostgreSQL: the load bench's one-session rows of this run
      const ours = await workmemTimes(size, 100);
      rows.push({
        metric: 'workmem vs the peer, per request',
        case: `${label} messages (the peer's median ÷ workmem's)`,
        median: median(peer) / median(ours),
        p99: null,
        unit: '×',
        target: null,
        met: null,
        note: `(workmem ${median(ours).toFixed(2)} ms, same run)`,
      });
    }
  } finally {
    await server?.stop();
  }
  return rows;
}
