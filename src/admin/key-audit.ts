/** Who makes or changes a key, and the key as its audit entries show it: governance only, never the key or its hash. */
import { usdString } from '../money/index.js';
import type { AccountRecord, Actor, KeyRecord, Permission } from '../storage/index.js';

export interface KeyAuthor {
  actor: Actor;
  /** The member who makes the key, its owner; null for the operator's keys (they act for the account's owner). */
  ownerUserId: string | null;
  /** The permissions this author may give a key; undefined: any (the operator). */
  grantable?: readonly Permission[];
}

/** The operator over the admin API (pass the client address) or the CLI (`id: 'cli'`). */
export function operator(ip?: string | null, id: string | null = null): KeyAuthor {
  return { actor: { type: 'operator', id, ...(ip ? { ip } : {}) }, ownerUserId: null };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function keyAuditView(key: KeyRecord): Record<string, unknown> {
  return {
    name: key.name,
    hint: key.hint,
    environment: key.environment,
    permissions: key.permissions,
    models: key.models,
    limit: key.spendLimitNano === null ? null : usdString(key.spendLimitNano),
    limit_reset: key.limitReset,
    expires_at: iso(key.expiresAt),
    requests_per_minute: key.requestsPerMinute,
    tokens_per_minute: key.tokensPerMinute,
    allowed_ips: key.allowedIps,
    owner_user_id: key.ownerUserId,
    revoked_at: iso(key.revokedAt),
  };
}

/**
 * An account change as the audit log keeps it: only the plan and the settings that changed, as they were and are
 * (amounts in nano-USD, as decimal strings).
 */
export function accountChanges(
  before: AccountRecord,
  after: AccountRecord,
): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const was: Record<string, unknown> = { plan: before.plan, ...before.settings };
  const now: Record<string, unknown> = { plan: after.plan, ...after.settings };
  const text = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  const changed = [...new Set([...Object.keys(was), ...Object.keys(now)])].filter((k) => text(was[k]) !== text(now[k]));
  return {
    before: Object.fromEntries(changed.map((k) => [k, was[k] ?? null])),
    after: Object.fromEntries(changed.map((k) => [k, now[k] ?? null])),
  };
}
