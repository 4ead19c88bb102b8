/**
 * npm run bench:postgres: N instances × M sessions on one PostgreSQL (started for the run,
 * or WORKMEM_TEST_DATABASE_URL), statements per request, and the LangGraph.js peer with its
 * PostgreSQL checkpointer on the same server.
 */
import { runBench } from './harness.js';
import { peerRows } from './peerRows.js';
import { PG_LOAD_FULL, postgresLoad } from './postgresLoad.js';

await runBench(
  'npm run bench:postgres',
  [
    ['Postgres load', () => postgresLoad(PG_LOAD_FULL)],
    ['LangGraph.js + PostgresSaver, the peer', () => peerRows(PG_LOAD_FULL.historySizes, { postgres: true })],
  ],
  'bench/results-postgres.json',
);
