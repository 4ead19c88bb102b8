import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // gc() for the soak: its heap is measured after a forced collection, not as load leaves it.
    execArgv: ['--expose-gc'],
  },
});
