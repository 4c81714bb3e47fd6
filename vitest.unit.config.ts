import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The developer's fast loop (`npm run test:unit`): the test files that need no server — no PostgreSQL, no Redis,
 * no gateway or mock upstream listening on a port, no child process, no browser. CI runs the whole suite
 * (`npm test`, vitest.config.ts), these files included. A new test file that needs none of those belongs here.
 */
export const UNIT = [
  'test/admin/key-fields.test.ts',
  'test/architecture/imports.test.ts',
  'test/architecture/providers-face.test.ts',
  'test/auth/authenticator.test.ts',
  'test/billing/credit-state.test.ts',
  'test/billing/money.test.ts',
  'test/catalog/display-name.test.ts',
  'test/config/catalog.test.ts',
  'test/config/default-prices.test.ts',
  'test/config/payments.test.ts',
  'test/gateway/chat.test.ts',
  'test/gateway/completions.test.ts',
  'test/gateway/embeddings.test.ts',
  'test/gateway/exposure.test.ts',
  'test/gateway/messages.test.ts',
  'test/gateway/responses.test.ts',
  'test/http/client-signal.test.ts',
  'test/limits/memory.test.ts',
  'test/observability/metrics.test.ts',
  'test/pricing/pricing.test.ts',
  'test/protocols/anthropic-messages.test.ts',
  'test/protocols/openai-responses.test.ts',
  'test/providers/redact.test.ts',
  'test/providers/sandbox.test.ts',
  'test/routing/config.test.ts',
  'test/routing/live-figures.test.ts',
  'test/routing/open-stream.test.ts',
  'test/storage/unavailable.test.ts',
  'test/tokens/prompt-tokens.test.ts',
  'test/webhooks/index.test.ts',
  'test/webhooks/receiver.test.ts',
  'test/webhooks/ssrf-backoff.test.ts',
];

export default defineConfig({
  test: {
    include: UNIT,
    testTimeout: 30_000,
    // Processes, as in the whole suite (some files change the working directory, which threads cannot), one per CPU.
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism()),
    // Each process imports the gateway's modules once for all the files it runs, not once per file: four times less
    // CPU on two cores. So a file here must put back what it changes globally (working directory, timers, env).
    isolate: false,
    reporters: ['default'],
  },
});
