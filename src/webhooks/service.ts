/** What the `/v1/webhooks` routes do, for one account: registrations, deliveries, dead letters, replay, test. */
import { GatewayError, invalidRequest, messageOf } from '../errors/index.js';
import { plainJson } from '../money/index.js';
import {
  newId,
  storedJson,
  type Actor,
  type Changes,
  type DeliveryRecord,
  type DeliveryStatus,
  type Storage,
  type WebhookRecord,
} from '../storage/index.js';
import { attemptDelivery, type AttemptOutcome } from './deliver.js';
import { BlockedAddressError, resolveTarget } from './ssrf.js';
import { parseCreate, parsePatch } from './validation.js';

export interface ServiceOptions {
  storage: Storage;
  allowPrivate: boolean;
  /** A registration changed: reload the subscription index. */
  onChange(): Promise<void>;
  /** A delivery is due now: wake the worker. */
  onDue(): void;
}

export interface Page {
  limit: number;
  before?: string;
  status?: DeliveryStatus;
}

const STATUSES: readonly DeliveryStatus[] = ['pending', 'delivering', 'succeeded', 'dead', 'failed'];

/** `?limit=&before=&status=` of the list endpoints; a parameter given more than once is a bad value. */
export function parsePage(query: PageParams, withStatus: boolean): Page {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalidRequest('limit must be an integer from 1 to 100', 'limit');
  const page: Page = { limit };
  if (Array.isArray(query.before)) throw invalidRequest("Query parameter 'before' was given more than once", 'before');
  if (query.before) page.before = query.before;
  if (withStatus && query.status !== undefined) {
    const status = STATUSES.find((known) => known === query.status);
    if (!status) throw invalidRequest(`status must be one of ${STATUSES.join(', ')}`, 'status');
    page.status = status;
  }
  return page;
}

/** The query parameters `parsePage` reads: each a string, or all its values when given more than once. */
export interface PageParams {
  limit?: string | string[];
  before?: string | string[];
  status?: string | string[];
}

export class WebhookService {
  constructor(private readonly options: ServiceOptions) {}

  private get store() {
    return this.options.storage.webhooks;
  }

  async create(accountId: string, body: unknown, actor: Actor): Promise<WebhookRecord> {
    const input = parseCreate(body);
    await this.checkUrl(input.url);
    const now = Date.now();
    const record: WebhookRecord = {
      id: newId('wh'),
      accountId,
      url: input.url.toString(),
      secret: input.secret,
      events: input.events,
      headers: input.headers,
      timeoutMs: input.timeoutMs,
      retry: input.retry,
      description: input.description ?? null,
      createdAt: now,
      updatedAt: now,
    };
    await this.options.storage.atomically(async (changes) => {
      await changes.webhooks.create(record);
      await audit(changes, actor, 'webhook.create', record.accountId, record.id, null, audited(record));
    });
    await this.options.onChange();
    return record;
  }

  list(accountId: string): Promise<WebhookRecord[]> {
    return this.store.listByAccount(accountId);
  }

  async get(accountId: string, id: string): Promise<WebhookRecord> {
    const webhook = await this.store.get(id);
    if (!webhook || webhook.accountId !== accountId)
      throw new GatewayError('not_found', { message: `No webhook with id '${id}'`, param: 'id' });
    return webhook;
  }

  async update(accountId: string, id: string, body: unknown, actor: Actor): Promise<WebhookRecord> {
    const current = await this.get(accountId, id);
    const input = parsePatch(body, current.retry);
    if (input.url) await this.checkUrl(input.url);
    const { url, ...rest } = input;
    const changed = { ...rest, ...(url ? { url: url.toString() } : {}) };
    const updated = await this.options.storage.atomically(async (changes) => {
      const after = await changes.webhooks.update(id, changed, Date.now());
      await audit(changes, actor, 'webhook.update', accountId, id, audited(current), after && audited(after));
      return after;
    });
    await this.options.onChange();
    return updated ?? current;
  }

  async delete(accountId: string, id: string, actor: Actor): Promise<void> {
    const current = await this.get(accountId, id);
    await this.options.storage.atomically(async (changes) => {
      await changes.webhooks.deleteWithin(id);
      await audit(changes, actor, 'webhook.delete', accountId, id, audited(current), null);
    });
    await this.options.onChange();
  }

  async deliveries(accountId: string, id: string, page: Page): Promise<DeliveryRecord[]> {
    await this.get(accountId, id);
    return this.store.listDeliveries({ webhookId: id, ...(page.status ? { status: page.status } : {}) }, page);
  }

  deadLetters(accountId: string, page: Page): Promise<DeliveryRecord[]> {
    return this.store.listDeliveries({ accountId, status: 'dead' }, page);
  }

  /**
   * Sends a dead letter again with a fresh attempt budget. The envelope keeps its id (receivers deduplicate on
   * it) and gets a new `timestamp`, since receivers reject envelopes older than an hour (rule 5).
   */
  async replay(accountId: string, deliveryId: string): Promise<DeliveryRecord> {
    const delivery = await this.store.getDelivery(deliveryId);
    if (!delivery || delivery.accountId !== accountId) {
      throw new GatewayError('not_found', { message: `No dead letter with id '${deliveryId}'`, param: 'id' });
    }
    if (delivery.status !== 'dead')
      throw invalidRequest(`Delivery '${deliveryId}' is ${delivery.status}, not a dead letter`, 'id');
    const envelope = storedJson<Record<string, unknown>>(delivery.payload);
    envelope.timestamp = new Date().toISOString();
    const replayed = await this.store.replay(deliveryId, plainJson(JSON.stringify(envelope)), Date.now());
    if (!replayed) throw invalidRequest(`Delivery '${deliveryId}' is not a dead letter any more`, 'id');
    this.options.onDue();
    return replayed;
  }

  /** One attempt right now with a `webhook.test` event, no retries; recorded among the deliveries. */
  async test(accountId: string, id: string): Promise<{ delivery: DeliveryRecord; outcome: AttemptOutcome }> {
    const webhook = await this.get(accountId, id);
    const eventId = newId('evt');
    const payload = JSON.stringify({
      id: eventId,
      timestamp: new Date().toISOString(),
      event: 'webhook.test',
      data: { webhookId: webhook.id, message: 'A test event from tollgate' },
    });
    const outcome = await attemptDelivery(
      webhook,
      payload,
      { eventId, eventType: 'webhook.test' },
      this.options.allowPrivate,
    );
    const at = Date.now();
    const delivery: DeliveryRecord = {
      id: newId('whd'),
      webhookId: webhook.id,
      accountId,
      eventId,
      eventType: 'webhook.test',
      payload,
      status: outcome.ok ? 'succeeded' : 'failed',
      attempts: 1,
      nextAttemptAt: at,
      lastStatus: outcome.status,
      lastError: outcome.error,
      createdAt: at,
      updatedAt: at,
      completedAt: at,
    };
    await this.store.insertDeliveries([{ ...delivery, at }]);
    return { delivery, outcome };
  }

  private async checkUrl(url: URL): Promise<void> {
    try {
      await resolveTarget(url, this.options.allowPrivate);
    } catch (error) {
      if (error instanceof BlockedAddressError) {
        throw invalidRequest(
          `The webhook URL is refused: ${error.message}. Operators may allow such URLs with webhooks.allow_private_urls`,
          'url',
        );
      }
      throw invalidRequest(`The webhook URL's host cannot be resolved: ${messageOf(error)}`, 'url');
    }
  }
}

/** A registration as the audit log keeps it: never the signing secret, and only the names of its extra headers. */
function audited(webhook: WebhookRecord) {
  return {
    url: webhook.url,
    events: webhook.events,
    header_names: Object.keys(webhook.headers),
    timeout: webhook.timeoutMs,
    retry: webhook.retry,
    description: webhook.description,
  };
}

async function audit(
  changes: Changes,
  actor: Actor,
  action: string,
  accountId: string,
  id: string,
  before: unknown,
  after: unknown,
): Promise<void> {
  await changes.audit.record({ accountId, actor, action, target: { type: 'webhook', id }, before, after });
}
