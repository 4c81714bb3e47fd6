import { Type, type Static } from '@sinclair/typebox';

const PositiveInt = Type.Integer({ minimum: 1 });
const UsdAmount = Type.Number({ minimum: 0 });

export const CapabilitiesSchema = Type.Object(
  {
    chat: Type.Boolean(),
    completion: Type.Boolean(),
    function_calling: Type.Boolean(),
    vision: Type.Boolean(),
    embeddings: Type.Boolean(),
    json_mode: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const ModelSchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    aliases: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    provider: Type.String({ minLength: 1 }),
    upstream_model: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String()),
    /** USD per 1,000 tokens. */
    pricing: Type.Object({ prompt: UsdAmount, completion: UsdAmount }, { additionalProperties: false }),
    context_length: PositiveInt,
    max_tokens: PositiveInt,
    capabilities: CapabilitiesSchema,
    created: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const PlanSchema = Type.Object(
  {
    requests_per_minute: PositiveInt,
    tokens_per_minute: PositiveInt,
    daily_limit: Type.Optional(Type.Union([UsdAmount, Type.Null()])),
  },
  { additionalProperties: false },
);

export const ProviderSettingsSchema = Type.Object(
  {
    api_key: Type.Optional(Type.String()),
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    name: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        port: Type.Integer({ minimum: 0, maximum: 65535 }),
        host: Type.String({ minLength: 1 }),
        body_limit_bytes: PositiveInt,
        upstream_timeout_ms: PositiveInt,
        cors_origins: Type.Array(Type.String()),
        trust_proxy: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    storage: Type.Object(
      {
        data_dir: Type.String({ minLength: 1 }),
        database_url: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
      },
      { additionalProperties: false },
    ),
    redis_url: Type.Optional(Type.String({ pattern: '^rediss?://' })),
    /** Prefix of every Redis key (several installations, or tests, can share one Redis). */
    redis_prefix: Type.String({ pattern: '^[A-Za-z0-9:_.-]{1,64}$' }),
    admin_token: Type.Optional(Type.String({ minLength: 16 })),
    /** Secret for the HMAC of stored API keys; generated and kept in the database when absent. */
    key_secret: Type.Optional(Type.String({ minLength: 16 })),
    key_prefix: Type.String({ pattern: '^[a-z][a-z0-9]{0,7}$' }),
    /** Server processes on this machine (node:cluster); more than one needs PostgreSQL and Redis. */
    workers: Type.Integer({ minimum: 1, maximum: 256 }),
    log_level: Type.Union([
      Type.Literal('fatal'),
      Type.Literal('error'),
      Type.Literal('warn'),
      Type.Literal('info'),
      Type.Literal('debug'),
      Type.Literal('trace'),
      Type.Literal('silent'),
    ]),
    metrics_public: Type.Boolean(),
    credits: Type.Object(
      {
        signup_grant: UsdAmount,
        low_balance_thresholds: Type.Array(UsdAmount),
      },
      { additionalProperties: false },
    ),
    default_plan: Type.String({ minLength: 1 }),
    plans: Type.Record(Type.String({ minLength: 1 }), PlanSchema),
    providers: Type.Record(Type.String({ pattern: '^[a-z0-9][a-z0-9_-]*$' }), ProviderSettingsSchema),
    default_models: Type.Boolean(),
    models: Type.Array(ModelSchema),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type PlanConfig = Static<typeof PlanSchema>;
export type Capabilities = Static<typeof CapabilitiesSchema>;
export type ProviderSettings = Static<typeof ProviderSettingsSchema>;
