import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // gc() for the soak: its heap is measured after a forced collection, not as load leaves it.
    execArgv: ['--expose-gc'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: ['test/pack.test.ts'], sequence: { groupOrder: 0 } },
      },
      // The pack test compiles sqlite3 for minutes: it runs after every other file, not beside timed ones.
      { extends: true, test: { name: 'pack', include: ['test/pack.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
