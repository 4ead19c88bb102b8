/**
 * npm run bench: workmem's own costs at full size, and a peer's in the same run; one
 * markdown table, the same figures in bench/results.json. About two minutes on the 2-core
 * machine. The 500-turn token and cache runs are `npm run bench:cache`; the PostgreSQL load
 * is `npm run bench:postgres`.
 */
import { allocation } from './allocation.js';
import {
  cliStart,
  FULL,
  itemMemory,
  orchestrationAsTheCliRuns,
  orchestrationOverhead,
  resume,
  throughput,
  traceCost,
} from './benchmarks.js';
import { runBench } from './harness.js';
import { hostLoopOverhead } from './hostLoopBench.js';
import { langchainAgentState } from './langchainState.js';
import { peerRows } from './peerRows.js';
import { proxyOverhead } from './proxyBench.js';
import { tokenCountAfterCollections } from './tokenCount.js';

await runBench(
  'npm run bench',
  [
    ['orchestration overhead', () => orchestrationOverhead(FULL)],
    ['orchestration overhead, as the CLI runs', () => orchestrationAsTheCliRuns(FULL)],
    ['allocation', () => allocation(FULL.sizes, 50, 300)],
    ['host loop and middleware', () => hostLoopOverhead({ ...FULL, warmup: 30, samples: 200 })],
    ['LangChain agent state', () => langchainAgentState(10_000, 10, 100)],
    ['proxy overhead (workmem serve)', () => proxyOverhead(FULL)],
    ['LangGraph.js, the peer', () => peerRows(FULL.sizes)],
    ['resume', () => resume(FULL)],
    ['throughput', () => throughput(FULL)],
    ['trace cost', () => traceCost(FULL)],
    ['CLI start', () => cliStart(FULL)],
    ['item memory', () => itemMemory(FULL)],
    ['token count after collections', () => tokenCountAfterCollections(30)],
  ],
  'bench/results.json',
);
