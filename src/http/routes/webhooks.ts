/** `/v1/webhooks`: the contract's registration API, for full keys (docs/api.md#webhooks). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DeliveryRecord, WebhookRecord } from '../../storage/index.js';
import { parsePage, type WebhookService } from '../../webhooks/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { IdParams, PageQuery, QueryValue, typed } from './typed.js';

const DeliveryQuery = Type.Object({ limit: QueryValue, before: QueryValue, status: QueryValue });
const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

export function renderWebhook(webhook: WebhookRecord): Record<string, unknown> {
  return {
    id: webhook.id,
    object: 'webhook',
    url: webhook.url,
    events: webhook.events,
    headers: webhook.headers,
    timeout: webhook.timeoutMs,
    retryConfig: webhook.retry,
    description: webhook.description,
    created: seconds(webhook.createdAt),
    updated: seconds(webhook.updatedAt),
  };
}

export function renderDelivery(delivery: DeliveryRecord): Record<string, unknown> {
  return {
    id: delivery.id,
    object: 'webhook_delivery',
    webhook_id: delivery.webhookId,
    event_id: delivery.eventId,
    event: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    next_attempt_at: delivery.status === 'pending' ? seconds(delivery.nextAttemptAt) : null,
    last_status: delivery.lastStatus,
    last_error: delivery.lastError,
    created: seconds(delivery.createdAt),
    completed_at: seconds(delivery.completedAt),
    payload: JSON.parse(delivery.payload),
  };
}

const list = (items: DeliveryRecord[], limit: number) => ({
  object: 'list',
  data: items.map(renderDelivery),
  has_more: items.length === limit,
});

export function webhookRoutes(app: FastifyInstance, deps: HttpDeps, webhooks: WebhookService): void {
  const server = typed(app);
  /** The calling key's account and the key as the audit log's actor. */
  const caller = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = await admitRead(deps, request, reply, 'manage');
    return { accountId: key.accountId, actor: { type: 'key' as const, id: key.id, ip: request.ip } };
  };
  const account = async (request: FastifyRequest, reply: FastifyReply) => (await caller(request, reply)).accountId;
  const params = { params: IdParams };

  server.post('/v1/webhooks', async (request, reply) => {
    const { accountId, actor } = await caller(request, reply);
    const webhook = await webhooks.create(accountId, request.body, actor);
    // The only time the secret is shown.
    return reply.code(201).send({ ...renderWebhook(webhook), secret: webhook.secret });
  });

  server.get('/v1/webhooks', async (request, reply) => {
    const items = await webhooks.list(await account(request, reply));
    return { object: 'list', data: items.map(renderWebhook) };
  });

  server.get('/v1/webhooks/dead-letters', { schema: { querystring: PageQuery } }, async (request, reply) => {
    const owner = await account(request, reply);
    const page = parsePage(request.query, false);
    return list(await webhooks.deadLetters(owner, page), page.limit);
  });

  server.post('/v1/webhooks/dead-letters/:id/replay', { schema: params }, async (request, reply) => {
    const delivery = await webhooks.replay(await account(request, reply), request.params.id);
    return reply.code(202).send(renderDelivery(delivery));
  });

  server.get('/v1/webhooks/:id', { schema: params }, async (request, reply) =>
    renderWebhook(await webhooks.get(await account(request, reply), request.params.id)),
  );

  server.patch('/v1/webhooks/:id', { schema: params }, async (request, reply) => {
    const { accountId, actor } = await caller(request, reply);
    return renderWebhook(await webhooks.update(accountId, request.params.id, request.body, actor));
  });

  server.delete('/v1/webhooks/:id', { schema: params }, async (request, reply) => {
    const { accountId, actor } = await caller(request, reply);
    await webhooks.delete(accountId, request.params.id, actor);
    return { id: request.params.id, object: 'webhook', deleted: true };
  });

  server.get(
    '/v1/webhooks/:id/deliveries',
    { schema: { params: IdParams, querystring: DeliveryQuery } },
    async (request, reply) => {
      const owner = await account(request, reply);
      const page = parsePage(request.query, true);
      return list(await webhooks.deliveries(owner, request.params.id, page), page.limit);
    },
  );

  server.post('/v1/webhooks/:id/test', { schema: params }, async (request, reply) => {
    const { delivery, outcome } = await webhooks.test(await account(request, reply), request.params.id);
    return {
      object: 'webhook_test',
      success: outcome.ok,
      status: outcome.status,
      error: outcome.error,
      duration_ms: outcome.durationMs,
      delivery: renderDelivery(delivery),
    };
  });
}
