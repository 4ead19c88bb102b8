/**
 * npm run bench:background: background compaction (issue 41) over a 300-turn session with a
 * summarizer 2 s away, beside the same session without it and one that never compacts; the
 * default threshold against others; `workmem eval`'s workmem arms per behaviour profile with
 * and without it. About fifteen minutes on the 2-core machine.
 */
import { BACKGROUND_FULL, backgroundCompaction, backgroundThresholds } from './backgroundBench.js';
import { backgroundEval } from './backgroundEval.js';
import { runBench } from './harness.js';

await runBench(
  'npm run bench:background',
  [
    ['background compaction', () => backgroundCompaction(BACKGROUND_FULL)],
    // Turns twice as fast: the headroom each threshold leaves is put to the test.
    ['background thresholds', () => backgroundThresholds({ ...BACKGROUND_FULL, modelMs: 100 }, [0.5, 0.6, 0.7, 0.73])],
    ['workmem eval per behaviour profile', () => backgroundEval('small')],
  ],
  'bench/results-background.json',
);
