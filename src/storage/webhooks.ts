/**
 * Webhook registrations and the delivery outbox. A delivery is claimed by one worker at a time: on PostgreSQL
 * with `FOR UPDATE SKIP LOCKED` (replicas never take the same row), on SQLite by its single writer; a claim is a
 * lease, so a worker that dies mid-attempt leaves a row another worker takes again once the lease runs out.
 */
import { type Kysely, type Selectable, type Updateable } from 'kysely';
import type { Dialect } from './connect.js';
import type { Database, DeliveryStatus, WebhookDeliveriesTable, WebhooksTable } from './schema.js';
import { num, numOrNull, storedJson } from './values.js';
import { claimFairly, countDue, NO_CAPS, type ClaimCaps } from './webhook-claim.js';

export interface RetryConfig {
  maxAttempts: number;
  initialDelay: number;
  maxDelay: number;
  backoffMultiplier: number;
}

export type FilterValue = string | number | boolean | null;

export interface WebhookEventSpec {
  type: string;
  filters?: Record<string, FilterValue>;
}

export interface WebhookRecord {
  id: string;
  accountId: string;
  url: string;
  secret: string;
  events: WebhookEventSpec[];
  headers: Record<string, string>;
  timeoutMs: number;
  retry: RetryConfig;
  description: string | null;
  createdAt: number;
  updatedAt: number;
}

export type { DeliveryStatus };

export interface DeliveryRecord {
  id: string;
  webhookId: string;
  accountId: string;
  eventId: string;
  eventType: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  completedAt: number | null;
}

export type NewDelivery = Pick<DeliveryRecord, 'id' | 'webhookId' | 'accountId' | 'eventId' | 'eventType' | 'payload'> &
  Partial<Pick<DeliveryRecord, 'status' | 'attempts' | 'lastStatus' | 'lastError' | 'completedAt'>> & { at: number };

export interface AttemptResult {
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  at: number;
}

export type WebhookChanges = Partial<
  Pick<WebhookRecord, 'url' | 'secret' | 'events' | 'headers' | 'timeoutMs' | 'retry' | 'description'>
>;

/** SQLite allows 32,766 bound values per statement; 16 columns per row. */
const INSERT_CHUNK = 500;

function toWebhook(row: Selectable<WebhooksTable>): WebhookRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    secret: row.secret,
    events: storedJson<WebhookEventSpec[]>(row.events),
    headers: storedJson<Record<string, string>>(row.headers),
    timeoutMs: num(row.timeout_ms),
    retry: storedJson<RetryConfig>(row.retry_config),
    description: row.description,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

function toDelivery(row: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    accountId: row.account_id,
    eventId: row.event_id,
    eventType: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: num(row.attempts),
    nextAttemptAt: num(row.next_attempt_at),
    lastStatus: numOrNull(row.last_status),
    lastError: row.last_error,
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    completedAt: numOrNull(row.completed_at),
  };
}

export class WebhookStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  async create(webhook: WebhookRecord): Promise<void> {
    await this.db
      .insertInto('webhooks')
      .values({
        id: webhook.id,
        account_id: webhook.accountId,
        url: webhook.url,
        secret: webhook.secret,
        events: JSON.stringify(webhook.events),
        headers: JSON.stringify(webhook.headers),
        timeout_ms: webhook.timeoutMs,
        retry_config: JSON.stringify(webhook.retry),
        description: webhook.description,
        created_at: webhook.createdAt,
        updated_at: webhook.updatedAt,
      })
      .execute();
  }

  async get(id: string): Promise<WebhookRecord | undefined> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toWebhook(row);
  }

  async getMany(ids: string[]): Promise<WebhookRecord[]> {
    if (ids.length === 0) return [];
    return (await this.db.selectFrom('webhooks').selectAll().where('id', 'in', ids).execute()).map(toWebhook);
  }

  async listByAccount(accountId: string): Promise<WebhookRecord[]> {
    return (
      await this.db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('id').execute()
    ).map(toWebhook);
  }

  /** Every registration (the outbox's subscription index). */
  async listAll(): Promise<WebhookRecord[]> {
    return (await this.db.selectFrom('webhooks').selectAll().orderBy('id').execute()).map(toWebhook);
  }

  async update(id: string, changes: WebhookChanges, at: number): Promise<WebhookRecord | undefined> {
    const set: Updateable<WebhooksTable> = { updated_at: at };
    if (changes.url !== undefined) set.url = changes.url;
    if (changes.secret !== undefined) set.secret = changes.secret;
    if (changes.events !== undefined) set.events = JSON.stringify(changes.events);
    if (changes.headers !== undefined) set.headers = JSON.stringify(changes.headers);
    if (changes.timeoutMs !== undefined) set.timeout_ms = changes.timeoutMs;
    if (changes.retry !== undefined) set.retry_config = JSON.stringify(changes.retry);
    if (changes.description !== undefined) set.description = changes.description;
    await this.db.updateTable('webhooks').set(set).where('id', '=', id).execute();
    return this.get(id);
  }

  /** Removes the registration and its deliveries (pending ones are not sent). */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => new WebhookStore(trx, this.dialect).deleteWithin(id));
  }

  /** `delete` without a transaction of its own: for a store of `Storage.atomically`, already in one. */
  async deleteWithin(id: string): Promise<void> {
    await this.db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
    await this.db.deleteFrom('webhooks').where('id', '=', id).execute();
  }

  async insertDeliveries(deliveries: readonly NewDelivery[]): Promise<void> {
    for (let i = 0; i < deliveries.length; i += INSERT_CHUNK) {
      const rows = deliveries.slice(i, i + INSERT_CHUNK).map((d) => ({
        id: d.id,
        webhook_id: d.webhookId,
        account_id: d.accountId,
        event_id: d.eventId,
        event_type: d.eventType,
        payload: d.payload,
        status: d.status ?? 'pending',
        attempts: d.attempts ?? 0,
        next_attempt_at: d.at,
        last_status: d.lastStatus ?? null,
        last_error: d.lastError ?? null,
        created_at: d.at,
        updated_at: d.at,
        completed_at: d.completedAt ?? null,
      }));
      await this.db.insertInto('webhook_deliveries').values(rows).execute();
    }
  }

  /**
   * Takes up to `limit` due deliveries (and those whose claim expired) for `leaseMs`, under `token`, leaving
   * out rows beyond the caps on attempts in flight per webhook and per account (./webhook-claim.ts).
   */
  async claim(
    now: number,
    limit: number,
    leaseMs: number,
    token: string,
    caps: ClaimCaps = NO_CAPS,
  ): Promise<DeliveryRecord[]> {
    return (await claimFairly(this.db, this.dialect, { now, limit, leaseMs, token, caps })).map(toDelivery);
  }

  /** Deliveries due now and not claimed. */
  countDue(now: number): Promise<number> {
    return countDue(this.db, now);
  }

  /** Extends the leases of the rows still claimed under `tokens` (attempts in flight) to `until`. */
  async renewLeases(tokens: readonly string[], until: number): Promise<void> {
    if (tokens.length === 0) return;
    await this.db
      .updateTable('webhook_deliveries')
      .set({ lease_until: until })
      .where('status', '=', 'delivering')
      .where('lease_token', 'in', tokens)
      .execute();
  }

  /** Records an attempt's outcome; false when the claim was lost (expired and taken by another worker). */
  async finishAttempt(id: string, token: string, result: AttemptResult): Promise<boolean> {
    const done = result.status !== 'pending';
    const outcome = await this.db
      .updateTable('webhook_deliveries')
      .set({
        status: result.status,
        attempts: result.attempts,
        next_attempt_at: result.nextAttemptAt,
        last_status: result.lastStatus,
        last_error: result.lastError,
        lease_token: null,
        lease_until: null,
        updated_at: result.at,
        completed_at: done ? result.at : null,
      })
      .where('id', '=', id)
      .where('lease_token', '=', token)
      .executeTakeFirst();
    return Number(outcome.numUpdatedRows) > 0;
  }

  async getDelivery(id: string): Promise<DeliveryRecord | undefined> {
    const row = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toDelivery(row);
  }

  /** Newest first; `before` is a delivery id (ids sort by creation). */
  async listDeliveries(
    filter: { webhookId?: string; accountId?: string; status?: DeliveryStatus },
    page: { limit: number; before?: string },
  ): Promise<DeliveryRecord[]> {
    let query = this.db.selectFrom('webhook_deliveries').selectAll().orderBy('id', 'desc').limit(page.limit);
    if (filter.webhookId) query = query.where('webhook_id', '=', filter.webhookId);
    if (filter.accountId) query = query.where('account_id', '=', filter.accountId);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (page.before) query = query.where('id', '<', page.before);
    return (await query.execute()).map(toDelivery);
  }

  /** A dead letter goes back to the outbox with a fresh attempt budget; undefined when it is not dead (any more). */
  /** The delivery the replay left (a read after it could already see a worker's claim). */
  async replay(id: string, payload: string, now: number): Promise<DeliveryRecord | undefined> {
    const row = await this.db
      .updateTable('webhook_deliveries')
      .set({
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        payload,
        updated_at: now,
        completed_at: null,
        last_error: null,
        last_status: null,
      })
      .where('id', '=', id)
      .where('status', '=', 'dead')
      .returningAll()
      .executeTakeFirst();
    return row && toDelivery(row);
  }
}
