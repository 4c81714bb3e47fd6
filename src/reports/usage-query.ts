/** The query of GET /v1/usage (and the CLI's `tollgate usage`): a range of UTC days, a grouping, a format. */
import { invalidRequest } from '../errors/index.js';
import type { ChargeGrouping } from '../storage/index.js';

export const GROUPINGS: readonly ChargeGrouping[] = ['day', 'model', 'key', 'endpoint'];
export const FORMATS = ['json', 'csv'] as const;
export type UsageFormat = (typeof FORMATS)[number];

export interface UsageQuery {
  /** Inclusive UTC days, `YYYY-MM-DD`. */
  from: string;
  to: string;
  /** Unset: one row per request. */
  groupBy: ChargeGrouping | undefined;
  format: UsageFormat;
  /** The range in Unix ms, `[fromMs, toMs)`. */
  fromMs: number;
  toMs: number;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** Defaults: from the first of this month to today. A bad value is a 400 naming its parameter. */
export function parseUsageQuery(raw: Record<string, unknown>, now = Date.now()): UsageQuery {
  const today = new Date(now).toISOString().slice(0, 10);
  const from = dayParam(raw, 'from') ?? `${today.slice(0, 7)}-01`;
  const to = dayParam(raw, 'to') ?? today;
  const fromMs = Date.parse(`${from}T00:00:00Z`);
  const toMs = Date.parse(`${to}T00:00:00Z`) + DAY_MS;
  if (fromMs >= toMs) throw invalidRequest(`'from' (${from}) must not be after 'to' (${to})`, 'from');
  const groupBy = oneOf(raw, 'group_by', GROUPINGS);
  const format = oneOf(raw, 'format', FORMATS) ?? 'json';
  return { from, to, groupBy, format, fromMs, toMs };
}

function dayParam(raw: Record<string, unknown>, name: string): string | undefined {
  const value = raw[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !DAY.test(value) || !isCalendarDay(value))
    throw invalidRequest(`'${name}' must be a UTC day, YYYY-MM-DD`, name);
  return value;
}

function oneOf<T extends string>(raw: Record<string, unknown>, name: string, values: readonly T[]): T | undefined {
  const value = raw[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !values.includes(value as T))
    throw invalidRequest(`'${name}' must be one of ${values.join(', ')}`, name);
  return value as T;
}

/** `2026-02-30` matches the pattern but is no day: JavaScript would roll it over to March. */
function isCalendarDay(day: string): boolean {
  const ms = Date.parse(`${day}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === day;
}
