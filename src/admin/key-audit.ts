/** Who makes or changes a key, and the key as its audit entries show it: governance only, never the key or its hash. */
import { usdString } from '../money/index.js';
import type { Actor, KeyRecord, Permission } from '../storage/index.js';

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
