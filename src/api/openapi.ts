/**
 * The OpenAPI 3.1 document of tollgate's HTTP API, served at GET /v1/openapi.json. It is assembled from the
 * schemas that validate requests (chat, webhooks, admin) and the response schemas of ./schemas.ts: no copy is
 * kept by hand. Schemas with an `$id` become components and are referenced wherever they are nested.
 */
import type { TSchema } from '@sinclair/typebox';
import { VERSION } from '../config/index.js';
import {
  AddCreditsSchema,
  CreateAccountSchema,
  CreateKeySchema,
  PatchAccountSchema,
  RefundPurchaseSchema,
} from '../admin/index.js';
import { CreatePurchaseSchema } from '../payments/index.js';
import { CreateWebhookSchema, PatchWebhookSchema } from '../webhooks/index.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  CreditBalanceSchema,
  CreditPurchaseSchema,
  ModelListSchema,
  ModelSchema,
  Page,
  RESPONSE_SCHEMAS,
  WebhookDeliverySchema,
  WebhookSchema,
} from './schemas.js';
import { ChatRequestSchema } from '../wire/index.js';

type Json = Record<string, unknown>;

const ERRORS: Record<number, string> = {
  400: 'Invalid request (`param` names the field), or context_length_exceeded',
  401: 'missing_api_key or invalid_api_key',
  402: 'insufficient_credits',
  403: 'permission_denied: the key may not do this',
  404: 'model_not_found, or not_found',
  409: 'idempotency_key_in_use: a request with this Idempotency-Key is still running (Retry-After: 1)',
  413: 'request_too_large',
  422: 'idempotency_key_reused: the Idempotency-Key was used with a different request',
  429: 'rate_limit_exceeded or daily_limit_exceeded, with `retry_after` and the Retry-After header',
  502: 'upstream_error: every provider for the model failed (purchases: Stripe failed)',
  503: 'model_unavailable or service_unavailable',
  504: 'upstream_timeout',
};

export function openApiDocument(): Json {
  const schemas: Json = {};
  for (const schema of RESPONSE_SCHEMAS) schemas[schema.$id!] = plain(schema, true);
  schemas.ChatRequest = plain(ChatRequestSchema, true);
  return {
    openapi: '3.1.0',
    info: {
      title: 'tollgate',
      version: VERSION,
      description:
        'OpenAI-compatible LLM gateway paid from prepaid USD credit balances. Amounts are USD numbers with at most 9 decimals; ' +
        '`created`-style fields are Unix seconds. Every response carries `x-request-id`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'This gateway' }],
    security: [{ apiKey: [] }],
    tags: [
      { name: 'chat' },
      { name: 'models' },
      { name: 'credits' },
      { name: 'webhooks' },
      { name: 'operations' },
      { name: 'admin' },
    ],
    paths: {
      '/v1/chat/completions': { post: chatOperation() },
      '/v1/models': {
        get: operation('models', 'List models with pricing, capabilities, performance and status', {
          parameters: [
            query(
              'include_capabilities',
              { type: 'boolean', default: false },
              'Adds `modalities` and `supported_parameters`',
            ),
            query('provider', { type: 'string' }, 'Only this provider id'),
            query(
              'capability',
              {
                type: 'string',
                enum: [
                  'chat',
                  'completion',
                  'image',
                  'embedding',
                  'function_calling',
                  'vision',
                  'embeddings',
                  'json_mode',
                ],
              },
              'Only models with this capability',
            ),
            query('active_only', { type: 'boolean', default: true }, 'Only models whose status is active'),
          ],
          ok: json(ModelListSchema),
          errors: [400, 401, 429],
        }),
      },
      '/v1/models/{model}': {
        get: operation('models', 'One model (aliases resolve to the versioned id)', {
          parameters: [path('model', 'A model id or alias; may contain `/`')],
          ok: json(ModelSchema),
          errors: [401, 404, 429],
        }),
      },
      '/v1/credits': {
        get: operation('credits', "Balance, usage, limits and billing of the key's account", {
          ok: json(CreditBalanceSchema),
          errors: [401, 429],
        }),
      },
      ...purchasePaths(),
      ...webhookPaths(),
      '/v1/openapi.json': {
        get: operation('operations', 'This document', {
          ok: { 'application/json': { schema: { type: 'object' } } },
          errors: [],
          security: [],
        }),
      },
      '/health': {
        get: operation('operations', 'Liveness: the process answers', {
          ok: { 'application/json': { schema: { type: 'object' } } },
          errors: [],
          security: [],
        }),
      },
      '/ready': {
        get: operation('operations', 'Readiness: the database answers (503 otherwise)', {
          ok: { 'application/json': { schema: { type: 'object' } } },
          errors: [503],
          security: [],
        }),
      },
      '/metrics': {
        get: operation('operations', 'Prometheus metrics (admin token unless metrics_public)', {
          ok: { 'text/plain': { schema: { type: 'string' } } },
          errors: [401, 429],
          security: [{ adminToken: [] }],
        }),
      },
      ...adminPaths(),
    },
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'A `tg-live-...` or `tg-test-...` key' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'TOLLGATE_ADMIN_TOKEN' },
      },
    },
  };
}

function chatOperation(): Json {
  return operation('chat', 'Create a chat completion (streamed as server-sent events when `stream` is true)', {
    body: ChatRequestSchema,
    parameters: [
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Up to 255 printable ASCII characters. A retry within 24 h returns the first answer and is not charged again (409 while the first runs, 422 with another body)',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ],
    ok: {
      'application/json': { schema: ref(ChatCompletionSchema) },
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Lines `data: <ChatCompletionChunk JSON>`, then `data: [DONE]`; an error after the first byte is one `data: {"error": ...}` event',
        },
        'x-event-schema': ref(ChatCompletionChunkSchema),
      },
    },
    errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
  });
}

function purchasePaths(): Json {
  const errors = [400, 401, 403, 429];
  return {
    '/v1/credits/purchases': {
      post: operation(
        'credits',
        'Buy credit (full keys): a Stripe Checkout session to pay at `checkout_url`; credited once Stripe confirms the payment. 400 when purchasing is off (no Stripe key) or `amount` is out of bounds; 502 when Stripe fails',
        {
          body: CreatePurchaseSchema,
          ok: json(CreditPurchaseSchema),
          okStatus: 201,
          errors: [...errors, 502],
        },
      ),
      get: operation('credits', "The account's credit purchases, newest first", {
        parameters: [
          query('limit', { type: 'integer', minimum: 1, maximum: 100, default: 20 }, 'Page size'),
          query('before', { type: 'string' }, 'Id of the last item of the previous page'),
        ],
        ok: json(Page(CreditPurchaseSchema)),
        errors,
      }),
    },
    '/v1/credits/purchases/{id}': {
      get: operation('credits', 'One credit purchase of the account', {
        parameters: [path('id', 'Purchase id (`cp_...`)')],
        ok: json(CreditPurchaseSchema),
        errors: [...errors, 404],
      }),
    },
    '/webhooks/stripe': {
      post: operation(
        'credits',
        "Stripe's event deliveries (signed with the Stripe-Signature header; 400 when it does not verify, nothing changes)",
        {
          ok: objectOk(),
          errors: [400],
          security: [],
        },
      ),
    },
  };
}

function webhookPaths(): Json {
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
      delete: operation('webhooks', 'Delete a webhook', { parameters: id, ok: objectOk(), errors }),
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
        ok: objectOk(),
        errors,
      }),
    },
  };
}

function adminPaths(): Json {
  // 429: too many wrong admin tokens from the client's address.
  const admin = { security: [{ adminToken: [] }], errors: [400, 401, 404, 429] };
  const account = [path('id', 'Account id (`acct_...`)')];
  return {
    '/admin/accounts': {
      get: operation('admin', 'List accounts', {
        ...admin,
        parameters: [
          query('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'Page size'),
          query('after', { type: 'string' }, 'Last id of the previous page'),
        ],
        ok: objectOk(),
      }),
      post: operation('admin', 'Create an account (with the sign-up grant) and its first live key', {
        ...admin,
        body: CreateAccountSchema,
        ok: objectOk(),
        okStatus: 201,
      }),
    },
    '/admin/accounts/{id}': {
      get: operation('admin', 'An account with balance and keys', { ...admin, parameters: account, ok: objectOk() }),
      patch: operation('admin', 'Change plan, limits, invoice billing, auto-recharge or low-balance thresholds', {
        ...admin,
        parameters: account,
        body: PatchAccountSchema,
        ok: objectOk(),
      }),
    },
    '/admin/accounts/{id}/keys': {
      post: operation('admin', 'Create a key (shown once)', {
        ...admin,
        parameters: account,
        body: CreateKeySchema,
        ok: objectOk(),
        okStatus: 201,
      }),
    },
    '/admin/accounts/{id}/credits': {
      post: operation('admin', 'Top up (a negative amount is a correction)', {
        ...admin,
        parameters: account,
        body: AddCreditsSchema,
        ok: objectOk(),
      }),
    },
    '/admin/accounts/{id}/ledger': {
      get: operation('admin', 'Ledger entries, newest first', {
        ...admin,
        parameters: [
          ...account,
          query('limit', { type: 'integer', minimum: 1, maximum: 500 }, 'Page size'),
          query('before', { type: 'string' }, 'Last id of the previous page'),
        ],
        ok: objectOk(),
      }),
    },
    '/admin/accounts/{id}/purchases': {
      get: operation('admin', "The account's credit purchases (Stripe Checkout), newest first", {
        ...admin,
        parameters: [
          ...account,
          query('limit', { type: 'integer', minimum: 1, maximum: 500 }, 'Page size'),
          query('before', { type: 'string' }, 'Last id of the previous page'),
        ],
        ok: json(Page(CreditPurchaseSchema)),
      }),
    },
    '/admin/accounts/{id}/purchases/{purchase}/refund': {
      post: operation(
        'admin',
        'Refund a paid purchase through Stripe (default: what is left of it) and debit it; the balance may go below zero',
        {
          ...admin,
          errors: [...admin.errors, 502],
          parameters: [...account, path('purchase', 'Purchase id (`cp_...`)')],
          body: RefundPurchaseSchema,
          ok: objectOk(),
        },
      ),
    },
    '/admin/keys/{id}': {
      delete: operation('admin', 'Revoke a key', {
        ...admin,
        parameters: [path('id', 'Key id (`key_...`)')],
        ok: objectOk(),
      }),
    },
  };
}

interface OperationSpec {
  parameters?: Json[];
  body?: TSchema;
  ok: Json;
  okStatus?: number;
  errors: number[];
  security?: Json[];
}

function operation(tag: string, summary: string, spec: OperationSpec): Json {
  const responses: Json = { [spec.okStatus ?? 200]: { description: 'Success', content: spec.ok } };
  for (const status of spec.errors)
    responses[status] = {
      description: ERRORS[status],
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  return {
    tags: [tag],
    summary,
    ...(spec.parameters?.length ? { parameters: spec.parameters } : {}),
    ...(spec.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema:
                  spec.body === ChatRequestSchema
                    ? { $ref: '#/components/schemas/ChatRequest' }
                    : plain(spec.body, false),
              },
            },
          },
        }
      : {}),
    responses,
    ...(spec.security ? { security: spec.security } : {}),
  };
}

const json = (schema: TSchema): Json => ({ 'application/json': { schema: ref(schema) } });
const objectOk = (): Json => ({ 'application/json': { schema: { type: 'object' } } });
const ref = (schema: TSchema): Json =>
  schema.$id ? { $ref: `#/components/schemas/${schema.$id}` } : plain(schema, false);
const query = (name: string, schema: Json, description: string): Json => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
const path = (name: string, description: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** The schema as plain JSON; nested schemas with an `$id` become `$ref`s (the root keeps its own when `root`). */
function plain(schema: TSchema, root: boolean): Json {
  const walk = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(walk) : value !== null && typeof value === 'object' ? object(value, false) : value;
  const object = (value: object, top: boolean): Json => {
    if (!top && '$id' in value && typeof value.$id === 'string') return { $ref: `#/components/schemas/${value.$id}` };
    const out: Json = {};
    for (const [key, item] of Object.entries(value)) if (key !== '$id') out[key] = walk(item);
    return out;
  };
  return object(JSON.parse(JSON.stringify(schema)), root);
}
