/**
 * The public API's response shapes (TypeBox = JSON Schema). They document what the routes send, for the OpenAPI
 * document and the exported types; tests check real responses against them. The chat, completions, embeddings,
 * Responses and Anthropic Messages answers come from the wire contract (wire/); the admin API's are in
 * ./admin-schemas.ts, the usage reports' (a request's charge, usage exports, the calling key) in ./usage-schemas.ts;
 * other request schemas live where they are validated (webhooks/, admin/, payments/) and are only referenced here.
 * A schema with an `$id` is one component of the OpenAPI document.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { CapabilitiesSchema, PricingSchema } from '../config/index.js';
import { ADMIN_SCHEMAS } from './admin-schemas.js';
import { AUDIT_SCHEMAS } from './audit-schemas.js';
import { USAGE_SCHEMAS, UsagePeriodSchema } from './usage-schemas.js';
import {
  AnthropicErrorSchema,
  AnthropicMessageSchema,
  AnthropicStreamEventSchema,
  AnthropicTokenCountSchema,
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  CompletionChunkSchema,
  CompletionSchema,
  EmbeddingListSchema,
  EmbeddingUsageSchema,
  Nullable,
  ResponseSchema,
  ResponseStreamEventSchema,
  ResponseUsageSchema,
  UnixSeconds,
  Usd,
  UsageSchema,
} from '../wire/index.js';

export { ChatCompletionChunkSchema, ChatCompletionSchema, UsageSchema };
export * from './admin-schemas.js';
export * from './usage-schemas.js';
export * from './audit-schemas.js';

export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String({
        description:
          'invalid_request_error, authentication_error, payment_required, permission_error, rate_limit_error, upstream_error, service_unavailable',
      }),
      code: Type.String(),
      param: Nullable(Type.String()),
      retry_after: Type.Optional(
        Type.Integer({
          minimum: 1,
          description: 'Seconds to wait (429 only); the Retry-After header carries the same value',
        }),
      ),
    }),
  },
  { $id: 'Error' },
);

const Balance = Type.Object({
  credits: Usd('Current balance; below zero only after a refund or dispute took back more than was left'),
  currency: Type.Literal('USD'),
  can_spend: Type.Optional(
    Type.Literal(false, {
      description: 'Present when the balance is below zero: no live request runs until credit is added',
    }),
  ),
  reason: Type.Optional(Type.String({ description: 'Why the account cannot spend' })),
});

export const CreditBalanceSchema = Type.Object(
  {
    object: Type.Literal('credit_balance'),
    balance: Balance,
    usage: Type.Optional(Type.Object({ daily: UsagePeriodSchema, monthly: UsagePeriodSchema })),
    limits: Type.Optional(
      Type.Object({
        rate_limit: Type.Object({ requests_per_minute: Type.Integer(), tokens_per_minute: Type.Integer() }),
        daily_limit: Type.Optional(Type.Object({ credits: Usd('Daily limit'), remaining: Usd('Left today') })),
      }),
    ),
    billing: Type.Optional(
      Type.Object({
        plan: Type.String({ description: 'free, pay_as_you_go, enterprise, or a plan from configuration' }),
        auto_recharge: Type.Object({
          enabled: Type.Boolean({ description: 'On, and the account has a payment processor to run it' }),
          threshold: Usd('Recharge below this balance'),
          amount: Usd('Recharge by'),
          available: Type.Boolean({
            description: "Whether the account's own user may turn auto-recharge on or change it",
          }),
          unavailable_reason: Nullable(Type.String({ description: 'Why not, when `available` is false' })),
          disabled_reason: Nullable(
            Type.String({
              description:
                'Why the gateway turned auto-recharge off itself (3 failed card recharges in a row); null once it is turned on again',
            }),
          ),
        }),
        next_billing_date: Type.String({ format: 'date-time' }),
      }),
    ),
  },
  {
    $id: 'CreditBalance',
    description: 'Full form for full keys; `object` and `balance` only for read_only and project keys',
  },
);

export const ModelSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('model'),
    created: UnixSeconds,
    owned_by: Type.String(),
    provider: Type.Object({ id: Type.String(), name: Type.String() }),
    pricing: Type.Object(
      { ...PricingSchema.properties, unit: Type.Literal('1k_tokens') },
      {
        description:
          'USD per 1,000 tokens of each kind (cache reads and writes, reasoning; absent kinds cost `prompt` or `completion`), fees per request, image and web search, long-context `tiers`, `service_tiers`, dated `changes` and `daily` windows, as configured',
        additionalProperties: false,
      },
    ),
    context_length: Type.Integer(),
    max_tokens: Type.Integer({ description: 'The most completion tokens the model produces in one answer' }),
    capabilities: CapabilitiesSchema,
    performance: Type.Object({
      avg_response_time: Nullable(
        Type.Number({ description: 'Mean seconds from request to last byte over the last hour' }),
      ),
      avg_tokens_per_second: Nullable(
        Type.Number({ description: 'Completion tokens per second of generation over the last hour' }),
      ),
      uptime_percentage: Nullable(
        Type.Number({ description: 'Successful upstream calls and health probes over the last 24 hours, percent' }),
      ),
    }),
    status: Type.Object({ active: Type.Boolean(), message: Type.String() }),
    modalities: Type.Optional(Type.Object({ input: Type.Array(Type.String()), output: Type.Array(Type.String()) })),
    supported_parameters: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'Model', description: '`modalities` and `supported_parameters` only with include_capabilities=true' },
);

export const ModelListSchema = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(ModelSchema) },
  { $id: 'ModelList' },
);

const RetryConfig = Type.Object({
  maxAttempts: Type.Integer(),
  initialDelay: Type.Integer({ description: 'milliseconds' }),
  maxDelay: Type.Integer({ description: 'milliseconds' }),
  backoffMultiplier: Type.Number(),
});

export const WebhookSchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook'),
    url: Type.String(),
    events: Type.Array(
      Type.Object({ type: Type.String(), filters: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }),
    ),
    headers: Type.Record(Type.String(), Type.String()),
    timeout: Type.Integer({ description: 'milliseconds' }),
    retryConfig: RetryConfig,
    description: Nullable(Type.String()),
    created: UnixSeconds,
    updated: UnixSeconds,
    secret: Type.Optional(Type.String({ description: 'Only in the answer to the creation' })),
  },
  { $id: 'Webhook' },
);

export const WebhookDeliverySchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('webhook_delivery'),
    webhook_id: Type.String(),
    event_id: Type.String(),
    event: Type.String(),
    status: Type.String({ description: 'pending, delivering, succeeded, failed (test sends), dead' }),
    attempts: Type.Integer(),
    next_attempt_at: Nullable(UnixSeconds),
    last_status: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    created: UnixSeconds,
    completed_at: Nullable(UnixSeconds),
    payload: Type.Object({
      id: Type.String(),
      timestamp: Type.String(),
      event: Type.String(),
      data: Type.Record(Type.String(), Type.Unknown()),
    }),
  },
  { $id: 'WebhookDelivery' },
);

export const DeletedWebhookSchema = Type.Object(
  { id: Type.String(), object: Type.Literal('webhook'), deleted: Type.Literal(true) },
  { $id: 'DeletedWebhook' },
);

export const WebhookTestSchema = Type.Object(
  {
    object: Type.Literal('webhook_test'),
    success: Type.Boolean({ description: 'The endpoint answered 2xx' }),
    status: Nullable(Type.Integer({ description: "The endpoint's HTTP status; null when it did not answer" })),
    error: Nullable(Type.String({ description: 'Why the send failed' })),
    duration_ms: Type.Integer({ minimum: 0 }),
    delivery: WebhookDeliverySchema,
  },
  { $id: 'WebhookTest' },
);

export const CreditPurchaseSchema = Type.Object(
  {
    id: Type.String({ description: '`cp_...`' }),
    object: Type.Literal('credit_purchase'),
    amount: Usd('The amount bought'),
    currency: Type.Literal('USD'),
    status: Type.Union(
      [Type.Literal('pending'), Type.Literal('paid'), Type.Literal('expired'), Type.Literal('failed')],
      {
        description:
          'pending until Stripe confirms the payment (then paid, credited once); expired: the checkout was not completed in time; failed: the checkout could not be started or the payment failed',
      },
    ),
    checkout_url: Nullable(Type.String({ description: 'Stripe Checkout page to pay at' })),
    receipt_url: Nullable(Type.String({ description: "Stripe's receipt, once paid" })),
    created: UnixSeconds,
    paid_at: Nullable(UnixSeconds),
  },
  { $id: 'CreditPurchase' },
);

export const StripeEventReceiptSchema = Type.Object(
  { received: Type.Literal(true) },
  { $id: 'StripeEventReceipt', description: 'The event verified and handled (or known already)' },
);

export const HealthSchema = Type.Object({ status: Type.Literal('ok') }, { $id: 'Health' });

export const ReadinessSchema = Type.Object(
  {
    status: Type.Literal('ready'),
    database: Type.Union([Type.Literal('postgres'), Type.Literal('sqlite')]),
  },
  { $id: 'Readiness' },
);

export const OpenApiDocumentSchema = Type.Object(
  {
    openapi: Type.String({ pattern: '^3\\.1\\.\\d+$' }),
    info: Type.Object({ title: Type.String(), version: Type.String() }),
    paths: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
    components: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { $id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document (this one)' },
);

export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ object: Type.Literal('list'), data: Type.Array(item), has_more: Type.Optional(Type.Boolean()) });

/** Every named schema: `components.schemas` of the OpenAPI document, where nested uses become `$ref`s. */
export const RESPONSE_SCHEMAS = [
  ErrorSchema,
  UsageSchema,
  EmbeddingUsageSchema,
  EmbeddingListSchema,
  ChatCompletionSchema,
  ChatCompletionChunkSchema,
  CompletionSchema,
  CompletionChunkSchema,
  ResponseUsageSchema,
  ResponseSchema,
  ResponseStreamEventSchema,
  AnthropicMessageSchema,
  AnthropicStreamEventSchema,
  AnthropicTokenCountSchema,
  AnthropicErrorSchema,
  CreditBalanceSchema,
  ModelSchema,
  ModelListSchema,
  WebhookSchema,
  WebhookDeliverySchema,
  DeletedWebhookSchema,
  WebhookTestSchema,
  CreditPurchaseSchema,
  StripeEventReceiptSchema,
  HealthSchema,
  ReadinessSchema,
  OpenApiDocumentSchema,
  ...USAGE_SCHEMAS,
  ...AUDIT_SCHEMAS,
  ...ADMIN_SCHEMAS,
];
