import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // gc() for the soak: its heap is measured after a forced collection, not as load leaves it.
    execArgv: ['--expose-gc'],
    // A passing run prints only the reporter: a test that prints (or raises a process warning) fails the run.
    reporters: ['default', './test/quietReporter.ts'],
    setupFiles: ['./test/warningsAsLogs.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/pack.test.ts'],
          sequence: { groupOrder: 0 },
          // One line for the run when the Postgres tests are skipped.
          globalSetup: ['test/storage/postgresNotice.ts'],
        },
      },
      // The pack test installs from the registry and spawns CLIs: it runs after every other file, alone.
      { extends: true, test: { name: 'pack', include: ['test/pack.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
