/**
 * npm run bench:cache: 500-turn sessions through the test server's prompt cache — the
 * prompt tokens per request against a full-history agent, and the cached share and the
 * bill for workmem and two peers. Several minutes on the 2-core machine.
 */
import { FULL, tokenEfficiency } from './benchmarks.js';
import { cacheEconomics } from './cacheEconomics.js';
import { runBench } from './harness.js';

await runBench(
  'npm run bench:cache',
  [
    ['token efficiency and prefix stability', () => tokenEfficiency(FULL)],
    ['cache economics', () => cacheEconomics(FULL.efficiencyTurns)],
  ],
  'bench/results-cache.json',
);
