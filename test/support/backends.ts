/**
 * Which of the tests' servers answered the global setup's probe (test/setup/backends.ts), and describe() variants
 * that skip a suite needing a missing one. The setup prints why once; in CI a missing server fails the run instead.
 */
import { describe, inject } from 'vitest';
import type { Backends } from '../setup/backends.js';

export type Backend = keyof Backends;
type Dialect = 'sqlite' | 'postgres';

export const { postgres: hasPostgres, redis: hasRedis } = inject('backends');

/** Whether every server named answers. */
export function reachable(...needs: Backend[]): boolean {
  return needs.every((backend) => (backend === 'postgres' ? hasPostgres : hasRedis));
}

type SkippableSuite = ReturnType<typeof describe.skipIf>;

/** `describe`, skipped when PostgreSQL (Redis, both) is missing; the title says which the suite needs. */
export const needsPostgres: SkippableSuite = describe.skipIf(!hasPostgres);
export const needsRedis: SkippableSuite = describe.skipIf(!hasRedis);
export const needsPostgresAndRedis: SkippableSuite = describe.skipIf(!reachable('postgres', 'redis'));

/**
 * What a case of a loop over DIALECTS needs. A case is a dialect, a tuple starting with one, or an object with a
 * `dialect` and maybe an `env` (whose REDIS_URL means Redis too).
 */
export function caseNeeds(item: unknown): Backend[] {
  if (typeof item === 'string') return item === 'postgres' ? ['postgres'] : [];
  if (Array.isArray(item)) return caseNeeds(item[0]);
  const { dialect, env } = (item ?? {}) as { dialect?: unknown; env?: Record<string, unknown> };
  return [...caseNeeds(dialect), ...(env?.REDIS_URL ? (['redis'] as const) : [])];
}

export const dialectReachable = (dialect: Dialect): boolean => reachable(...caseNeeds(dialect));

type CaseArgs<T> = T extends readonly unknown[] ? [...T] : [T];

/**
 * `describe.each(cases)(name, fn)` with each case a suite of its own, skipped when a server it needs (`caseNeeds`)
 * is missing: over DIALECTS only the postgres suites are skipped.
 */
export function describeEach<T>(cases: readonly T[]): (name: string, fn: (...args: CaseArgs<T>) => void) => void {
  return (name, fn) => {
    for (const item of cases) {
      describe.skipIf(!reachable(...caseNeeds(item))).each([item] as unknown[])(
        name,
        fn as (...args: unknown[]) => void,
      );
    }
  };
}
