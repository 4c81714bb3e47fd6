/**
 * The EventSink of webhooks. `wants` is a lookup in an in-memory index of the registrations; `rows` builds the
 * envelope once and picks the matching webhooks of the event's account: one delivery row each. Events caused by a
 * debit go to the committer in rows, written in the debit's transaction. `emit` (the best-effort events) buffers
 * the rows and writes the buffer in one multi-row insert per event-loop turn, so the request path never waits for
 * the database; rows not yet written are lost if the process dies (docs/webhooks.md).
 */
import type { EventSink, GatewayEvent, GatewayEventType } from '../events/index.js';
import { plainJson } from '../money/index.js';
import { newId, type NewDelivery, type Storage, type WebhookRecord } from '../storage/index.js';
import { matchesFilters, toEnvelope } from './envelope.js';
import { expandType } from './types.js';

export class SubscriptionIndex {
  /** account -> concrete type -> webhooks */
  private byAccount = new Map<string, Map<string, WebhookRecord[]>>();
  /** concrete type -> number of webhooks (any account) */
  private typeCounts = new Map<string, number>();
  private count = 0;

  replace(all: readonly WebhookRecord[]): void {
    const byAccount = new Map<string, Map<string, WebhookRecord[]>>();
    const typeCounts = new Map<string, number>();
    for (const webhook of all) {
      const types = byAccount.get(webhook.accountId) ?? new Map<string, WebhookRecord[]>();
      byAccount.set(webhook.accountId, types);
      for (const type of new Set(webhook.events.flatMap((spec) => expandType(spec.type)))) {
        types.set(type, [...(types.get(type) ?? []), webhook]);
        typeCounts.set(type, (typeCounts.get(type) ?? 0) + 1);
      }
    }
    this.byAccount = byAccount;
    this.typeCounts = typeCounts;
    this.count = all.length;
  }

  /** Webhooks registered, over all accounts. */
  get size(): number {
    return this.count;
  }

  wants(type: GatewayEventType, accountId?: string): boolean {
    if (accountId === undefined) return (this.typeCounts.get(type) ?? 0) > 0;
    return this.byAccount.get(accountId)?.has(type) ?? false;
  }

  subscribers(accountId: string, type: string): readonly WebhookRecord[] {
    return this.byAccount.get(accountId)?.get(type) ?? [];
  }
}

export interface OutboxOptions {
  storage: Storage;
  index: SubscriptionIndex;
  maxBuffered: number;
  /** New rows are in the table: the local worker can look at once. */
  onWritten(): void;
  onError(error: unknown, dropped: number): void;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

export class WebhookOutbox implements EventSink {
  private buffer: NewDelivery[] = [];
  private scheduled = false;
  private writing: Promise<void> | undefined;
  private retryMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: OutboxOptions) {}

  wants(type: GatewayEventType, accountId?: string): boolean {
    return this.options.index.wants(type, accountId);
  }

  /** Buffers the event's rows, written on the next turn of the event loop (best effort: a crash loses the buffer). */
  emit(event: GatewayEvent): void {
    const rows = this.rows(event);
    if (rows.length === 0) return;
    for (const row of rows) this.buffer.push(row);
    this.schedule();
  }

  /** One delivery row per matching webhook, for the caller to write in the transaction of the change behind the event. */
  rows(event: GatewayEvent): NewDelivery[] {
    const webhooks = this.options.index.subscribers(event.accountId, event.type);
    if (webhooks.length === 0) return [];
    const eventId = newId('evt');
    const envelope = toEnvelope(event, eventId);
    let payload: string | undefined;
    const at = Date.now();
    const rows: NewDelivery[] = [];
    for (const webhook of webhooks) {
      const specs = webhook.events.filter((spec) => expandType(spec.type).includes(event.type));
      if (!specs.some((spec) => matchesFilters(spec.filters, envelope))) continue;
      payload ??= plainJson(JSON.stringify(envelope));
      rows.push({
        id: newId('whd'),
        webhookId: webhook.id,
        accountId: event.accountId,
        eventId,
        eventType: event.type,
        payload,
        at,
      });
    }
    return rows;
  }

  written(): void {
    this.options.onWritten();
  }

  /** Writes everything buffered (shutdown); gives up after one failed attempt. */
  async flush(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.writing;
    if (this.buffer.length) await this.write();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private schedule(): void {
    if (this.buffer.length > this.options.maxBuffered) {
      const dropped = this.buffer.splice(0, this.buffer.length - this.options.maxBuffered);
      this.options.onError(new Error('webhook outbox buffer full'), dropped.length);
    }
    if (this.scheduled || this.writing || this.retryTimer || this.closed || this.buffer.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.write();
    });
  }

  private write(): Promise<void> {
    const batch = this.buffer;
    this.buffer = [];
    this.writing = this.options.storage.webhooks.insertDeliveries(batch).then(
      () => {
        this.retryMs = 0;
        this.writing = undefined;
        this.options.onWritten();
        this.schedule();
      },
      (error: unknown) => {
        this.writing = undefined;
        // Back in front, in order; retried with a growing pause while the database is away.
        this.buffer = batch.concat(this.buffer);
        this.options.onError(error, 0);
        if (this.closed) return;
        this.retryMs = Math.min(Math.max(this.retryMs * 2, RETRY_MIN_MS), RETRY_MAX_MS);
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.schedule();
        }, this.retryMs);
        this.retryTimer.unref();
      },
    );
    return this.writing;
  }
}
