/** The OpenAPI paths of webhook registrations and their deliveries (`/v1/webhooks`). */
import { CreateWebhookSchema, PatchWebhookSchema } from '../webhooks/index.js';
import { json, operation, path, query, type Json } from './openapi-builder.js';
import { DeletedWebhookSchema, Page, WebhookDeliverySchema, WebhookSchema, WebhookTestSchema } from './schemas.js';

export function webhookPaths(): Json {
  const id = [path('id', 'Webhook id (`wh_...`)')];
  const paging = (withStatus: boolean) => [
    query('limit', { type: 'integer', minimum: 1, maximum: 100, default: 20 }, 'Page size'),
    query('before', { type: 'string' }, 'Id of the last item of the previous page'),
    ...(withStatus
      ? [
          query(
            'status',
            { type: 'string', enum: ['pending', 'delivering', 'succeeded', 'failed', 'dead'] },
            'Only deliveries in this status',
          ),
        ]
      : []),
  ];
  const errors = [400, 401, 403, 404];
  return {
    '/v1/webhooks': {
      post: operation('webhooks', 'Register a webhook (full keys); the answer is the only time `secret` is shown', {
        body: CreateWebhookSchema,
        ok: json(WebhookSchema),
        okStatus: 201,
        errors,
      }),
      get: operation('webhooks', "List the account's webhooks", { ok: json(Page(WebhookSchema)), errors }),
    },
    '/v1/webhooks/dead-letters': {
      get: operation('webhooks', 'Deliveries that failed for good', {
        parameters: paging(false),
        ok: json(Page(WebhookDeliverySchema)),
        errors,
      }),
    },
    '/v1/webhooks/dead-letters/{id}/replay': {
      post: operation('webhooks', 'Send a dead letter again (a new delivery)', {
        parameters: [path('id', 'Delivery id (`whd_...`)')],
        ok: json(WebhookDeliverySchema),
        okStatus: 202,
        errors,
      }),
    },
    '/v1/webhooks/{id}': {
      get: operation('webhooks', 'One webhook', { parameters: id, ok: json(WebhookSchema), errors }),
      patch: operation('webhooks', 'Change a webhook', {
        parameters: id,
        body: PatchWebhookSchema,
        ok: json(WebhookSchema),
        errors,
      }),
      delete: operation('webhooks', 'Delete a webhook', { parameters: id, ok: json(DeletedWebhookSchema), errors }),
    },
    '/v1/webhooks/{id}/deliveries': {
      get: operation('webhooks', 'Recent deliveries of a webhook', {
        parameters: [...id, ...paging(true)],
        ok: json(Page(WebhookDeliverySchema)),
        errors,
      }),
    },
    '/v1/webhooks/{id}/test': {
      post: operation('webhooks', 'Send a `webhook.test` event now and report the outcome', {
        parameters: id,
        ok: json(WebhookTestSchema),
        errors,
      }),
    },
  };
}
