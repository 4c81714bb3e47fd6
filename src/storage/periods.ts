/**
 * The UTC periods a key's spend limit counts in (`limit_reset`): a day, a week from Monday, a calendar month.
 * Plain functions of a time, shared by the key lookup (what the key spent in its period) and admission.
 */
import type { LimitReset } from './schema.js';

const DAY_MS = 86_400_000;

/** The first UTC day (`YYYY-MM-DD`) of the period `at` falls in. */
export function periodStartDay(reset: LimitReset, at: number): string {
  const date = new Date(at);
  if (reset === 'monthly') return `${date.toISOString().slice(0, 7)}-01`;
  if (reset === 'weekly') {
    const sinceMonday = (date.getUTCDay() + 6) % 7;
    return new Date(at - sinceMonday * DAY_MS).toISOString().slice(0, 10);
  }
  return date.toISOString().slice(0, 10);
}

/** When the period `at` falls in ends and the limit starts again (Unix ms, 00:00 UTC). */
export function periodEnd(reset: LimitReset, at: number): number {
  const start = Date.parse(`${periodStartDay(reset, at)}T00:00:00Z`);
  if (reset === 'daily') return start + DAY_MS;
  if (reset === 'weekly') return start + 7 * DAY_MS;
  const date = new Date(start);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

/** A name of the period `at` falls in: what spend counted in it is stored under. '' for a limit that never resets. */
export function periodOf(reset: LimitReset | null, at: number): string {
  return reset === null ? '' : `${reset[0]}${periodStartDay(reset, at)}`;
}
