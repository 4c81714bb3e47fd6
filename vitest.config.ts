import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Probes PostgreSQL and Redis: suites that need a missing one are skipped (in CI the run fails).
    globalSetup: ['test/setup/backends.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
