import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Files whose assertions depend on having the CPU to themselves (a worker thread keeping pace with a writer,
 * CPU-time windows, admissions counted in a window of time): they run one at a time after the rest.
 */
const ALONE = ['test/storage/sqlite-checkpointer.test.ts', 'test/limits/redis.test.ts', 'test/bench/**/*.test.ts'];

export default defineConfig({
  test: {
    // Probes PostgreSQL and Redis: suites that need a missing one are skipped (in CI the run fails).
    globalSetup: ['test/setup/backends.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most test files wait on servers, sockets and child processes: two at a time even on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ALONE } },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
