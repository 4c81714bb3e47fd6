/**
 * The Webhooks section for the signed-in user: the WebhookService of `/v1/webhooks` (same validation, the
 * secret shown once at creation), reached with the session instead of a full key.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { IdParams, PageQuery, QueryValue, typed } from '../http/routes/typed.js';
import { renderDelivery, renderWebhook } from '../http/routes/webhooks.js';
import type { DeliveryRecord } from '../storage/index.js';
import { parsePage } from '../webhooks/index.js';
import { userActor, type Sessions } from './session.js';

const DeliveryQuery = Type.Object({ limit: QueryValue, status: QueryValue });

/** A delivery without its payload: the lists show what happened, not what was sent. */
function summary(delivery: DeliveryRecord): Record<string, unknown> {
  const { payload: _payload, ...rest } = renderDelivery(delivery);
  return rest;
}

export function webhookRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  async function owner(request: FastifyRequest) {
    const { accountId, userId } = await sessions.require(request, 'webhooks');
    if (!deps.webhooks) throw new GatewayError('not_found', { message: 'Webhooks are not enabled on this gateway' });
    return { accountId, webhooks: deps.webhooks, actor: userActor(request, userId) };
  }
  const params = { params: IdParams };

  scope.get('/api/webhooks', async (request) => {
    const { accountId, webhooks } = await owner(request);
    return { object: 'list', data: (await webhooks.list(accountId)).map(renderWebhook) };
  });

  scope.post('/api/webhooks', async (request, reply) => {
    const { accountId, webhooks, actor } = await owner(request);
    const webhook = await webhooks.create(accountId, request.body, actor);
    // The only time the secret is shown, like POST /v1/webhooks.
    return reply.code(201).send({ ...renderWebhook(webhook), secret: webhook.secret });
  });

  scope.patch('/api/webhooks/:id', { schema: params }, async (request) => {
    const { accountId, webhooks, actor } = await owner(request);
    return renderWebhook(await webhooks.update(accountId, request.params.id, request.body, actor));
  });

  scope.delete('/api/webhooks/:id', { schema: params }, async (request) => {
    const { accountId, webhooks, actor } = await owner(request);
    await webhooks.delete(accountId, request.params.id, actor);
    return { id: request.params.id, object: 'webhook', deleted: true };
  });

  scope.post('/api/webhooks/:id/test', { schema: params }, async (request) => {
    const { accountId, webhooks } = await owner(request);
    const { delivery, outcome } = await webhooks.test(accountId, request.params.id);
    return {
      object: 'webhook_test',
      success: outcome.ok,
      status: outcome.status,
      error: outcome.error,
      delivery: summary(delivery),
    };
  });

  /** The latest deliveries over all of the account's endpoints, newest first. */
  scope.get('/api/webhooks/deliveries', { schema: { querystring: DeliveryQuery } }, async (request) => {
    const { accountId, webhooks } = await owner(request);
    // One page from each endpoint, merged: a `before` cursor means nothing across endpoints.
    const { limit, status } = parsePage({ ...request.query, before: undefined }, true);
    const lists = await Promise.all(
      (await webhooks.list(accountId)).map((w) =>
        webhooks.deliveries(accountId, w.id, { limit, ...(status ? { status } : {}) }),
      ),
    );
    const latest = lists
      .flat()
      .sort((a, b) => b.createdAt - a.createdAt || b.id.localeCompare(a.id))
      .slice(0, limit);
    return { object: 'list', data: latest.map(summary) };
  });

  scope.get('/api/webhooks/dead-letters', { schema: { querystring: PageQuery } }, async (request) => {
    const { accountId, webhooks } = await owner(request);
    const page = parsePage(request.query, false);
    const items = await webhooks.deadLetters(accountId, page);
    return { object: 'list', data: items.map(summary), has_more: items.length === page.limit };
  });

  scope.post('/api/webhooks/dead-letters/:id/replay', { schema: params }, async (request, reply) => {
    const { accountId, webhooks } = await owner(request);
    return reply.code(202).send(summary(await webhooks.replay(accountId, request.params.id)));
  });
}
