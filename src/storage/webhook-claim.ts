/**
 * The fair claim of due deliveries. Every worker of every replica asks one statement, which counts the attempts
 * in flight (rows `delivering` under a live lease) per webhook and per account and leaves out the due rows beyond
 * each cap, so a receiver that never answers holds only its own share of attempts, whichever process makes them.
 * What is left is taken round-robin: first each account's first row, then each account's second, and so on;
 * within an account, each endpoint's oldest row before any endpoint's second.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Dialect } from './connect.js';
import type { Database, WebhookDeliveriesTable } from './schema.js';
import { num } from './values.js';

export interface ClaimCaps {
  /** Attempts in flight at once per webhook, all workers together. */
  perEndpoint: number;
  /** Attempts in flight at once per account, all its webhooks and all workers together. */
  perAccount: number;
}

export const NO_CAPS: ClaimCaps = { perEndpoint: Number.MAX_SAFE_INTEGER, perAccount: Number.MAX_SAFE_INTEGER };

/** Pending and due, or claimed by a worker whose lease ran out. */
const due = (now: number, table: string): RawBuilder<unknown> =>
  sql`((${sql.ref(`${table}.status`)} = 'pending' and ${sql.ref(`${table}.next_attempt_at`)} <= ${now})
    or (${sql.ref(`${table}.status`)} = 'delivering' and ${sql.ref(`${table}.lease_until`)} < ${now}))`;

/**
 * Each webhook's first `perEndpoint` due rows, found by index seeks per registration rather than a scan of every
 * due row, and the rows whose lease ran out: the cost follows the number of registrations, not the backlog a
 * receiver that never answers piles up. PostgreSQL takes them with LATERAL; SQLite, which has none, bounds each
 * webhook's index range by its `perEndpoint`-th due row (more rows only on ties of `next_attempt_at`; the
 * ranking below cuts those), and CROSS JOIN keeps its planner from scanning the deliveries first.
 */
const candidates = (dialect: Dialect, now: number, perEndpoint: number): RawBuilder<unknown> => {
  const firstDue =
    dialect === 'postgres'
      ? sql`select x.id, x.webhook_id, x.account_id, x.next_attempt_at from webhooks wh
          cross join lateral (
            select y.id, y.webhook_id, y.account_id, y.next_attempt_at from webhook_deliveries y
            where y.webhook_id = wh.id and y.status = 'pending' and y.next_attempt_at <= ${now}
            order by y.next_attempt_at, y.id limit ${perEndpoint}
          ) x`
      : sql`select x.id, x.webhook_id, x.account_id, x.next_attempt_at from webhooks wh
          cross join webhook_deliveries x
          where x.webhook_id = wh.id and x.status = 'pending' and x.next_attempt_at <= coalesce((
            select y.next_attempt_at from webhook_deliveries y
            where y.webhook_id = wh.id and y.status = 'pending' and y.next_attempt_at <= ${now}
            order by y.next_attempt_at limit 1 offset ${perEndpoint - 1}
          ), ${now})`;
  return sql`(${firstDue}
    union all
    select x.id, x.webhook_id, x.account_id, x.next_attempt_at from webhook_deliveries x
      where x.status = 'delivering' and x.lease_until < ${now})`;
};

const busy = (now: number, column: 'webhook_id' | 'account_id'): RawBuilder<unknown> =>
  sql`(select ${sql.ref(column)} as owner, count(*) as n from webhook_deliveries
      where status = 'delivering' and lease_until >= ${now} group by ${sql.ref(column)})`;

/**
 * On PostgreSQL the rows taken are locked with `SKIP LOCKED` and checked again once locked, so two replicas
 * claiming at once never take one row, and (ranking the same rows the same way) never take more than a cap
 * between them: the second skips the rows the first holds instead of taking the next ones.
 */
export async function claimFairly(
  db: Kysely<Database>,
  dialect: Dialect,
  claim: { now: number; limit: number; leaseMs: number; token: string; caps: ClaimCaps },
): Promise<Selectable<WebhookDeliveriesTable>[]> {
  const { now, limit, leaseMs, token, caps } = claim;
  const lock = dialect === 'postgres' ? sql`for update of d skip locked` : sql``;
  const result = await sql<Selectable<WebhookDeliveriesTable>>`
    update webhook_deliveries
    set status = 'delivering', lease_token = ${token}, lease_until = ${now + leaseMs}, updated_at = ${now}
    where id in (
      select d.id from (
        select ranked.id, ranked.account_id, ranked.next_attempt_at, ranked.endpoint_rank,
          row_number() over (partition by ranked.account_id order by ranked.endpoint_rank, ranked.next_attempt_at, ranked.id) as account_rank
        from (
          select w.id, w.webhook_id, w.account_id, w.next_attempt_at,
            row_number() over (partition by w.webhook_id order by w.next_attempt_at, w.id) as endpoint_rank
          from ${candidates(dialect, now, caps.perEndpoint)} w
        ) ranked
        left join ${busy(now, 'webhook_id')} endpoint_busy on endpoint_busy.owner = ranked.webhook_id
        where ranked.endpoint_rank <= ${caps.perEndpoint} - coalesce(endpoint_busy.n, 0)
      ) fair
      cross join webhook_deliveries d
      left join ${busy(now, 'account_id')} account_busy on account_busy.owner = fair.account_id
      where d.id = fair.id and fair.account_rank <= ${caps.perAccount} - coalesce(account_busy.n, 0) and ${due(now, 'd')}
      order by fair.account_rank, fair.next_attempt_at, fair.id
      limit ${limit}
      ${lock}
    )
    returning *`.execute(db);
  return result.rows;
}

/** Deliveries due and not yet claimed (`tollgate_webhook_queue_depth`). */
export async function countDue(db: Kysely<Database>, now: number): Promise<number> {
  const result = await sql<{
    n: bigint | number | string;
  }>`select count(*) as n from webhook_deliveries w where ${due(now, 'w')}`.execute(db);
  return num(result.rows[0]?.n);
}
