import { defineConfig } from 'vitest/config';
import { HANG_MS } from './test/hangGuard.js';

/**
 * Projects by what a test needs, named by file suffix: `*.test.ts` runs in process and
 * fast (npm run test:unit); `*.slow.test.ts` walks paths, properties or long sessions;
 * `*.process.test.ts` spawns the built CLI; `*.tmux.test.ts` drives it in a terminal;
 * `*.browser.test.ts` drives headless Chromium; `*.pg.test.ts` needs PostgreSQL;
 * `*.agents.test.ts` runs agents from npm (opencode, Qwen Code, the OpenAI Agents SDK)
 * through `workmem serve`, minutes each; the pack test installs the packed package.
 * `vitest --project <name>` picks one.
 */
const KINDS = ['slow', 'process', 'tmux', 'browser', 'pg', 'agents'] as const;
const PACK = 'test/project/pack.test.ts';
// Every kind shares a module cache per worker, as the unit project does: the files that spawn
// the CLI, a browser or a terminal still import the test server, the session and their clients
// in process (import time 17 → 10 s summed over those 12 files).
const kind = (name: (typeof KINDS)[number]) => ({
  extends: true as const,
  test: { name, include: [`test/**/*.${name}.test.ts`], isolate: false, sequence: { groupOrder: 0 } },
});

export default defineConfig({
  test: {
    // A hang guard, never a speed check: the suite's outcome must not depend on the machine's load (test/hangGuard.ts).
    testTimeout: HANG_MS,
    hookTimeout: HANG_MS,
    // Two files at a time on the 2-core machines we run on: much of a file's time is spent
    // waiting (child processes, servers, timers), and vitest's default there is one.
    maxWorkers: 2,
    // gc() for the soak: its heap is measured after a forced collection, not as load leaves it.
    execArgv: ['--expose-gc'],
    // A passing run prints only the reporter: a test that prints (or raises a process warning) fails the run.
    reporters: ['default', './test/project/quietReporter.ts'],
    setupFiles: ['./test/project/warningsAsLogs.ts', './test/project/tempHomeCleanup.ts'],
    // What each project needs from the machine, or a stop naming what to install; temporary files on a tmpfs;
    // one PostgreSQL for the run (or, with WORKMEM_TEST_POSTGRES=off, one line saying the Postgres tests are left out).
    globalSetup: ['test/project/preflight.ts', 'test/project/tmpfsTemp.ts', 'test/storage/runPostgres.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...KINDS.map((k) => `test/**/*.${k}.test.ts`), PACK],
          // The fast files share one module cache per worker: importing xstate, the AI SDK, LangChain
          // and openai once per worker, not once per file, halves the project's CPU time. They share no
          // mutable state (no mocks, stubs or environment changes); per-file cleanup lives in setup files.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      ...KINDS.map((k) => kind(k)),
      // The pack test installs from the registry and spawns CLIs. It runs beside the others (projects
      // start in name order, so early): most of its time is spent waiting on npm and its children.
      { extends: true, test: { name: 'pack', include: [PACK], sequence: { groupOrder: 0 } } },
    ],
  },
});
