/**
 * The audit log as `GET /v1/audit` and `GET /dashboard/api/audit` answer it: one query parser and one renderer for
 * both, so the two never differ.
 */
import { invalidRequest } from '../errors/index.js';
import type { AuditPage, AuditRecord, Storage } from '../storage/index.js';

export const AUDIT_PAGE_DEFAULT = 50;
export const AUDIT_PAGE_MAX = 100;

/** `?limit=` 1..100 (default 50), `?after=<entry id>`, `?action=` (exact, or a prefix ending in '.'). */
export function parseAuditQuery(query: Record<string, unknown>): AuditPage {
  const { limit, after, action } = query;
  let size = AUDIT_PAGE_DEFAULT;
  if (limit !== undefined) {
    if (typeof limit !== 'string' || !/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > AUDIT_PAGE_MAX)
      throw invalidRequest(`'limit' must be a whole number from 1 to ${AUDIT_PAGE_MAX}`, 'limit');
    size = Number(limit);
  }
  if (after !== undefined && (typeof after !== 'string' || after === ''))
    throw invalidRequest("'after' must be an audit entry id", 'after');
  if (action !== undefined && (typeof action !== 'string' || !/^[a-z_]+(\.[a-z_]*)?$/.test(action)))
    throw invalidRequest("'action' must be an action such as 'key.create', or a prefix such as 'webhook.'", 'action');
  return { limit: size, after: after, action: action };
}

export type AuditStores = Pick<Storage, 'audit' | 'users'>;

/** One page of the account's entries, newest first; `has_more` when an older one exists. */
export async function auditPage(stores: AuditStores, accountId: string, page: AuditPage) {
  const rows = await stores.audit.list(accountId, { ...page, limit: page.limit + 1 });
  const shown = rows.slice(0, page.limit);
  const emails = new Map<string, string | null>();
  for (const row of shown)
    if (row.actorType === 'user' && row.actorId && !emails.has(row.actorId))
      emails.set(row.actorId, (await stores.users.emailOf(row.actorId)) ?? null);
  return {
    object: 'list' as const,
    data: shown.map((row) => renderAuditEntry(row, row.actorId ? (emails.get(row.actorId) ?? null) : null)),
    has_more: rows.length > page.limit,
  };
}

export function renderAuditEntry(row: AuditRecord, email: string | null) {
  return {
    id: row.id,
    object: 'audit_entry' as const,
    action: row.action,
    actor: { type: row.actorType, id: row.actorId, email },
    target: { type: row.targetType, id: row.targetId },
    before: row.before,
    after: row.after,
    ip: row.ip,
    created: Math.floor(row.createdAt / 1000),
    created_date: new Date(row.createdAt).toISOString(),
  };
}
