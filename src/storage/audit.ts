/**
 * The audit log: who changed what in an account, before and after, when and from which address. Written with the
 * change, in its transaction (`Storage.atomically`), and read newest first.
 */
import type { Insertable, Kysely } from 'kysely';
import type { ActorType } from './records.js';
import type { AuditLogTable, Database } from './schema.js';
import { newId, num } from './values.js';

/** Who made a change: a dashboard user, an API key, the operator (admin API, CLI), a payment processor, tollgate. */
export interface Actor {
  type: ActorType;
  id: string | null;
  /** The client's address, where the change came over HTTP. */
  ip?: string | null;
}

export interface AuditEntry {
  accountId: string;
  actor: Actor;
  /** `<target>.<verb>`: `key.create`, `key.update`, `key.revoke`, `member.invite`, `member.role`, ... */
  action: string;
  target: { type: string; id: string | null };
  /** The target as it was and as it is (JSON-able; never a secret); null where there was none. */
  before?: unknown;
  after?: unknown;
  at?: number;
}

export interface AuditRecord {
  id: string;
  accountId: string;
  actorType: ActorType;
  actorId: string | null;
  action: string;
  targetType: string;
  targetId: string | null;
  before: unknown;
  after: unknown;
  ip: string | null;
  createdAt: number;
}

export interface AuditPage {
  limit: number;
  /** An entry id: only entries older than it (the previous page's last). */
  after?: string | undefined;
  /** Only this action, or actions starting with `<target>.` when it ends in a dot. */
  action?: string | undefined;
}

/** The `audit_log` row of an entry; `at` when the entry has no time of its own. */
export function auditRowOf(entry: AuditEntry, at = Date.now()): Insertable<AuditLogTable> {
  return {
    id: newId('aud'),
    account_id: entry.accountId,
    actor_type: entry.actor.type,
    actor_id: entry.actor.id,
    action: entry.action,
    target_type: entry.target.type,
    target_id: entry.target.id,
    before: entry.before === undefined || entry.before === null ? null : JSON.stringify(entry.before, plain),
    after: entry.after === undefined || entry.after === null ? null : JSON.stringify(entry.after, plain),
    ip: entry.actor.ip ?? null,
    created_at: entry.at ?? at,
  };
}

/** The columns of `audit_log` in the order the money writers insert them (`auditValues`). */
export const AUDIT_COLUMNS =
  'id, account_id, actor_type, actor_id, action, target_type, target_id, before, after, ip, created_at';

export function auditValues(row: Insertable<AuditLogTable>): Array<string | number | bigint | null> {
  return [
    row.id,
    row.account_id,
    row.actor_type,
    row.actor_id ?? null,
    row.action,
    row.target_type,
    row.target_id ?? null,
    row.before ?? null,
    row.after ?? null,
    row.ip ?? null,
    row.created_at,
  ];
}

export class AuditStore {
  constructor(private readonly db: Kysely<Database>) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.db.insertInto('audit_log').values(auditRowOf(entry)).execute();
  }

  /** Newest first; ties in time in id order. */
  async list(accountId: string, page: AuditPage): Promise<AuditRecord[]> {
    let query = this.db.selectFrom('audit_log').selectAll().where('account_id', '=', accountId);
    if (page.action?.endsWith('.')) query = query.where('action', 'like', `${page.action}%`);
    else if (page.action) query = query.where('action', '=', page.action);
    if (page.after) {
      const cursor = await this.db
        .selectFrom('audit_log')
        .select(['created_at', 'id'])
        .where('id', '=', page.after)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (!cursor) return [];
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', cursor.created_at),
          eb.and([eb('created_at', '=', cursor.created_at), eb('id', '<', cursor.id)]),
        ]),
      );
    }
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).execute();
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      actorType: row.actor_type,
      actorId: row.actor_id,
      action: row.action,
      targetType: row.target_type,
      targetId: row.target_id,
      before: row.before === null ? null : (JSON.parse(row.before) as unknown),
      after: row.after === null ? null : (JSON.parse(row.after) as unknown),
      ip: row.ip,
      createdAt: num(row.created_at),
    }));
  }
}

/** bigint amounts are written as decimal strings. */
function plain(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
