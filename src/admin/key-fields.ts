/**
 * The checks of a key's governance fields that a JSON Schema cannot make, in one place for every path that makes or
 * changes a key (admin API, CLI, dashboard, /v1/keys): exact USD, a real future date, CIDRs, rate limits within the
 * account's. Each bad value is a 400 naming its field.
 */
import { canonicalCidr } from '../auth/addresses.js';
import { invalidRequest } from '../errors/index.js';
import type { KeyChanges, LimitReset } from '../storage/index.js';
import type { KeyPatch } from './schemas.js';
import { usd } from './usd.js';

export const MAX_ALLOWED_IPS = 100;
const RESETS: readonly LimitReset[] = ['daily', 'weekly', 'monthly'];
/** A date, or a date and time with a zone (`Z` or `+02:00`); seconds and fractions optional. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

export interface KeyFieldContext {
  /** The account's rate limits in force (plan and overrides): a key's own may not be above them. */
  accountLimits: { requestsPerMinute: number; tokensPerMinute: number };
  now: number;
  /** On creation an expiry must be in the future; a PATCH may end a key now. */
  creating: boolean;
}

/** The changes `fields` ask for, checked; fields that are absent stay absent. */
export function keyChangesOf(fields: KeyPatch, context: KeyFieldContext): KeyChanges {
  const changes: KeyChanges = {};
  if (fields.name !== undefined) {
    if (typeof fields.name !== 'string') throw invalidRequest('name must be a string', 'name');
    const name = fields.name.trim();
    if (!context.creating && !name) throw invalidRequest('name must not be empty', 'name');
    if (name.length > 200) throw invalidRequest('name must be at most 200 characters', 'name');
    if (name) changes.name = name;
  }
  const limit = limitOf(fields);
  if (limit !== undefined) changes.spendLimitNano = limit;
  if (fields.limit_reset !== undefined) {
    if (fields.limit_reset !== null && !RESETS.includes(fields.limit_reset))
      throw invalidRequest('limit_reset must be daily, weekly, monthly or null', 'limit_reset');
    changes.limitReset = fields.limit_reset;
  }
  if (fields.expires_at !== undefined) changes.expiresAt = expiryOf(fields.expires_at, context);
  if (fields.requests_per_minute !== undefined)
    changes.requestsPerMinute = rateOf(
      fields.requests_per_minute,
      'requests_per_minute',
      context.accountLimits.requestsPerMinute,
    );
  if (fields.tokens_per_minute !== undefined)
    changes.tokensPerMinute = rateOf(
      fields.tokens_per_minute,
      'tokens_per_minute',
      context.accountLimits.tokensPerMinute,
    );
  if (fields.allowed_ips !== undefined) changes.allowedIps = cidrsOf(fields.allowed_ips);
  return changes;
}

/** `limit`, or its former name `spend_limit`: nano-USD, null for none, undefined when neither is given. */
function limitOf(fields: KeyPatch): bigint | null | undefined {
  const { limit, spend_limit } = fields;
  if (limit !== undefined && spend_limit !== undefined && limit !== spend_limit)
    throw invalidRequest('give limit or spend_limit (its former name), not both', 'spend_limit');
  const param = limit !== undefined ? 'limit' : 'spend_limit';
  const value = limit !== undefined ? limit : spend_limit;
  if (value === undefined || value === null) return value;
  return usd(value, param);
}

function expiryOf(value: string | null, context: KeyFieldContext): number | null {
  if (value === null) return null;
  const at = typeof value === 'string' && ISO_8601.test(value.trim()) ? Date.parse(value.trim()) : NaN;
  if (!Number.isFinite(at) || !realDay(value.trim()))
    throw invalidRequest('expires_at must be an ISO 8601 date and time (2027-01-31T00:00:00Z) or null', 'expires_at');
  if (context.creating && at <= context.now) throw invalidRequest('expires_at must be in the future', 'expires_at');
  return at;
}

/** Whether the text's date is a day of the calendar (Date.parse reads 2027-02-30 as March 2nd). */
function realDay(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function rateOf(value: number | null, param: string, accountLimit: number): number | null {
  if (value === null) return null;
  if (!Number.isSafeInteger(value) || value < 1)
    throw invalidRequest(`${param} must be a positive whole number or null`, param);
  if (value > accountLimit)
    throw invalidRequest(`${param} must be at most the account's ${accountLimit} (or null: the account's)`, param);
  return value;
}

function cidrsOf(values: unknown): string[] {
  if (!Array.isArray(values)) throw invalidRequest('allowed_ips must be a list of CIDRs or addresses', 'allowed_ips');
  if (values.length > MAX_ALLOWED_IPS)
    throw invalidRequest(`allowed_ips may list at most ${MAX_ALLOWED_IPS} CIDRs`, 'allowed_ips');
  const cidrs = values.map((value: unknown) => {
    const cidr = typeof value === 'string' ? canonicalCidr(value) : undefined;
    if (cidr === undefined)
      throw invalidRequest(
        `allowed_ips: '${String(value)}' is not an IPv4 or IPv6 address or CIDR (10.0.0.0/8, 2001:db8::/32)`,
        'allowed_ips',
      );
    return cidr;
  });
  return [...new Set(cidrs)];
}
