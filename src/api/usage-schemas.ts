/**
 * What each request cost, as the key's account reads it: one request explained (`GET /v1/generation`), a usage
 * export (`GET /v1/usage`) and the calling key (`GET /v1/key`), as src/reports and http/routes/usage.ts render them.
 * Each named schema is a component of the OpenAPI document, listed in `RESPONSE_SCHEMAS` of ./schemas.ts.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { GROUPINGS } from '../reports/index.js';
import { Nullable, UnixSeconds, Usd } from '../wire/index.js';
import { ApiKeySchema } from './admin-schemas.js';

/** A count of nano-USD as a decimal string: exact where a JSON number may not be. */
const Nano = (description: string) => Type.String({ pattern: '^[0-9]+$', description: `${description} (nano-USD)` });

/** A USD amount as an exact decimal string (never rounded, no exponent). */
const ExactUsd = (description: string) =>
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: `${description} (exact decimal USD)` });

export const UsagePeriodSchema = Type.Object({
  credits_used: Usd('Spent in the period'),
  requests: Type.Integer(),
  tokens: Type.Object({ prompt: Type.Integer(), completion: Type.Integer(), total: Type.Integer() }),
});

const TokenLine = Type.Object({
  kind: Type.Union(
    ['input', 'cached_input', 'cache_write', 'cache_write_1h', 'output', 'reasoning'].map((k) => Type.Literal(k)),
  ),
  quantity: Type.Integer({ minimum: 1, description: 'Tokens of this kind' }),
  unit: Type.Literal('token'),
  price_per_million: Usd('Price of 1,000,000 tokens of this kind'),
  cost: ExactUsd('quantity × price, to 1e-12 USD'),
});

const FeeLine = Type.Object({
  kind: Type.Union(['request', 'images', 'web_searches'].map((k) => Type.Literal(k))),
  quantity: Type.Integer({ minimum: 1 }),
  unit: Type.Union([Type.Literal('request'), Type.Literal('unit')]),
  price: Usd('Fee per request, image or web search'),
  cost: ExactUsd('quantity × price'),
});

export const GenerationSchema = Type.Object(
  {
    object: Type.Literal('generation'),
    id: Nullable(Type.String({ description: "The request's id (its `x-request-id`)" })),
    answer_id: Nullable(Type.String({ description: "The answer's own id (`chatcmpl-…`, `msg_…`, `resp_…`)" })),
    created: UnixSeconds,
    model: Nullable(Type.String()),
    provider: Nullable(Type.String({ description: 'The provider that answered' })),
    endpoint: Nullable(Type.String({ description: 'The path the request came on (`/v1/chat/completions`)' })),
    key: Type.Object({
      id: Nullable(Type.String({ description: 'The key the request was made with (`key_...`)' })),
      name: Nullable(Type.String()),
    }),
    streamed: Nullable(Type.Boolean()),
    cancelled: Nullable(Type.Boolean({ description: 'The client went away before the answer was complete' })),
    finish_reason: Nullable(
      Type.String({ description: "As the client's protocol says it (`stop`, `length`, `end_turn`, `completed`, ...)" }),
    ),
    latency_ms: Nullable(Type.Integer({ description: 'From arrival to settlement (the answer complete, or cut)' })),
    time_to_first_token_ms: Nullable(
      Type.Integer({ description: 'From arrival to the first token delivered; null when nothing was streamed' }),
    ),
    tokens: Type.Object(
      {
        prompt: Type.Integer(),
        completion: Type.Integer(),
        total: Type.Integer(),
        input: Nullable(Type.Integer({ description: 'Input tokens at the prompt price (not cached)' })),
        cached_input: Nullable(Type.Integer({ description: 'Cache reads' })),
        cache_write: Nullable(Type.Integer({ description: 'Cache writes (5 minutes)' })),
        cache_write_1h: Nullable(Type.Integer({ description: 'Cache writes (1 hour)' })),
        reasoning: Nullable(Type.Integer({ description: 'Reasoning tokens billed at their own price' })),
        output: Nullable(Type.Integer()),
        images: Nullable(Type.Integer()),
        web_searches: Nullable(Type.Integer()),
      },
      { description: '`prompt` and `completion` as charged; the kinds as the provider reported them' },
    ),
    cost: Usd('What the ledger took for the request'),
    cost_nano: Nano('The same, exact'),
    breakdown: Type.Union(
      [
        Type.Object({
          lines: Type.Array(Type.Union([TokenLine, FeeLine]), {
            description: 'Each priced kind with a quantity: tokens per kind at their price, then fees',
          }),
          tier_above_prompt_tokens: Nullable(
            Type.Integer({ description: 'The long-context tier applied: prompts above this many tokens' }),
          ),
          service_tier: Nullable(Type.String({ description: 'The service tier priced' })),
          priced_nano: Nano('The lines summed, rounded up to the nano-USD once'),
          charged_nano: Nano('What the ledger took: less than priced_nano only when the hold or a limit capped it'),
        }),
        Type.Null(),
      ],
      { description: 'The prices applied; null when the ledger row does not record them' },
    ),
    ledger_entry: Type.Object({
      id: Type.String({ description: '`led_...`' }),
      balance_after: Usd("The account's balance after the debit"),
    }),
  },
  { $id: 'Generation', description: "One request's charge explained" },
);

export const UsageTotalsSchema = Type.Object(
  {
    requests: Type.Integer(),
    prompt_tokens: Type.Integer(),
    completion_tokens: Type.Integer(),
    cost: Usd('Charged'),
    cost_nano: Nano('Charged, exact'),
  },
  { $id: 'UsageTotals' },
);

/** One request of an export: its JSON object, and the CSV's columns in this order. */
export const UsageRequestRowSchema = Type.Object(
  {
    created: Type.String({ format: 'date-time', description: 'When the request was charged (UTC, ISO 8601, ms)' }),
    request_id: Nullable(Type.String({ description: "The request's `x-request-id`" })),
    answer_id: Nullable(Type.String({ description: "The answer's own id" })),
    ledger_entry_id: Type.String({ description: '`led_...`' }),
    key_id: Nullable(Type.String()),
    key_name: Nullable(Type.String()),
    model: Nullable(Type.String()),
    provider: Nullable(Type.String()),
    endpoint: Nullable(Type.String()),
    prompt_tokens: Type.Integer(),
    completion_tokens: Type.Integer(),
    cached_input_tokens: Nullable(Type.Integer()),
    cache_write_tokens: Nullable(Type.Integer({ description: 'Cache writes, 5 minutes and 1 hour' })),
    reasoning_tokens: Nullable(Type.Integer()),
    finish_reason: Nullable(Type.String()),
    cost: Usd('Charged (in CSV: exact decimal USD)'),
    cost_nano: Nano('Charged, exact'),
  },
  { $id: 'UsageRequestRow', description: 'One request (`group_by` unset); the CSV has these columns in this order' },
);

/** The column a grouping adds before the sums: the UTC day, the model, the key (id and name) or the endpoint. */
const GROUP_COLUMNS: Record<(typeof GROUPINGS)[number], Record<string, TSchema>> = {
  day: { day: Type.String({ format: 'date', description: 'UTC day' }) },
  model: { model: Nullable(Type.String()) },
  key: { key_id: Nullable(Type.String()), key_name: Nullable(Type.String()) },
  endpoint: { endpoint: Nullable(Type.String()) },
};

export const UsageGroupRowSchema = Type.Union(
  GROUPINGS.map((by) =>
    Type.Object(
      { ...GROUP_COLUMNS[by], ...UsageTotalsSchema.properties },
      { description: `group_by=${by}: one row per ${by}` },
    ),
  ),
  {
    $id: 'UsageGroupRow',
    description: "One group's sums (`group_by` set); the CSV has the group's columns, then the sums, in this order",
  },
);

export const UsageExportSchema = Type.Object(
  {
    object: Type.Literal('usage'),
    from: Type.String({ format: 'date', description: 'First UTC day' }),
    to: Type.String({ format: 'date', description: 'Last UTC day, included' }),
    group_by: Nullable(Type.Union(GROUPINGS.map((by) => Type.Literal(by)))),
    data: Type.Array(Type.Union([UsageRequestRowSchema, UsageGroupRowSchema]), {
      description: 'Requests oldest first, or groups in the order of their value',
    }),
    total: UsageTotalsSchema,
  },
  { $id: 'UsageExport', description: "The account's charged requests of a range of UTC days" },
);

const { account_id: _account, revoked: _revoked, revoked_at: _revokedAt, ...keyFields } = ApiKeySchema.properties;

export const CallingKeySchema = Type.Object(
  {
    ...keyFields,
    rate_limit: Type.Object(
      { requests_per_minute: Type.Integer(), tokens_per_minute: Type.Integer() },
      { description: "The account's rate limits, shared by all its keys" },
    ),
    usage_daily: Type.Object(UsagePeriodSchema.properties, {
      description: "The key's requests, live or test, today (UTC)",
    }),
    usage_monthly: Type.Object(UsagePeriodSchema.properties, {
      description: "The key's requests, live or test, this month to date (UTC)",
    }),
  },
  {
    $id: 'CallingKey',
    description:
      'The key that made the request, with its governance (`limit`, `limit_reset`, `limit_remaining`, `usage` in the current period, `expires_at`, its own rate limits, `allowed_ips`, `owner`) and its usage today and this month',
  },
);

export const USAGE_SCHEMAS = [
  GenerationSchema,
  UsageTotalsSchema,
  UsageRequestRowSchema,
  UsageGroupRowSchema,
  UsageExportSchema,
  CallingKeySchema,
];
