import { Type, type Static } from '@sinclair/typebox';
import { PROVIDER_APIS } from './providers.js';

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

/** One provider that can serve a model; a model's deployments are tried in order (the first by weight when set). */
export const DeploymentSchema = Type.Object(
  {
    provider: Type.String({ minLength: 1 }),
    upstream_model: Type.Optional(Type.String({ minLength: 1 })),
    weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);

/** Token prices: USD per 1,000 tokens of each kind. Absent kinds cost what `prompt` (inputs) or `completion` costs. */
const tokenPrices = {
  prompt: Type.Optional(UsdAmount),
  completion: Type.Optional(UsdAmount),
  input_cache_read: Type.Optional(UsdAmount),
  input_cache_write: Type.Optional(UsdAmount),
  input_cache_write_1h: Type.Optional(UsdAmount),
  internal_reasoning: Type.Optional(UsdAmount),
};
/** Fees: USD per request, per input image, per server-side web search call. */
const fees = {
  request: Type.Optional(UsdAmount),
  image: Type.Optional(UsdAmount),
  web_search: Type.Optional(UsdAmount),
};
/** A UTC date (`2027-01-01`) or date-time (`2027-01-01T00:00:00Z`). */
const UtcDateTime = Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?Z)?$',
});
const HHMM = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' });

/** A long-context tier: a request whose prompt is above `above_prompt_tokens` pays these prices on every token. */
export const PriceTierSchema = Type.Object(
  { above_prompt_tokens: Type.Integer({ minimum: 0 }), ...tokenPrices },
  { additionalProperties: false },
);

/** Prices that differ from the base under some condition; the fields named replace the base's. */
const overrides = {
  ...tokenPrices,
  ...fees,
  tiers: Type.Optional(Type.Array(PriceTierSchema)),
};
const ServiceTierPricesSchema = Type.Object(overrides, { additionalProperties: false });

export const PricingSchema = Type.Object(
  {
    ...overrides,
    prompt: UsdAmount,
    completion: UsdAmount,
    /** Prices per service tier the provider sells (`priority`, `flex`; Anthropic's `fast`); an unlisted tier is refused. */
    service_tiers: Type.Optional(Type.Record(Type.String({ minLength: 1 }), ServiceTierPricesSchema)),
    /** Known price changes: from `effective_from` (UTC) on, the fields named replace the base's. */
    changes: Type.Optional(
      Type.Array(Type.Object({ effective_from: UtcDateTime, ...overrides }, { additionalProperties: false })),
    ),
    /** Daily windows (UTC, `from` inclusive, `to` exclusive, may wrap midnight) with their own prices: off-peak hours. */
    daily: Type.Optional(
      Type.Array(
        Type.Object({ from_utc: HHMM, to_utc: HHMM, ...tokenPrices, ...fees }, { additionalProperties: false }),
      ),
    ),
  },
  { additionalProperties: false },
);
export type PricingConfig = Static<typeof PricingSchema>;

export const ModelSchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    aliases: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    provider: Type.String({ minLength: 1 }),
    upstream_model: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String()),
    pricing: PricingSchema,
    context_length: PositiveInt,
    /** Completion tokens at most; 0 for a model that generates nothing (embeddings). */
    max_tokens: Type.Integer({ minimum: 0 }),
    capabilities: CapabilitiesSchema,
    created: Type.Integer({ minimum: 0 }),
    /** Where the model is served; absent = one deployment of `provider` / `upstream_model`. */
    deployments: Type.Optional(Type.Array(DeploymentSchema, { minItems: 1 })),
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
    /** The wire format of a provider tollgate does not know (default `openai`). */
    api: Type.Optional(Type.Union(PROVIDER_APIS.map((api) => Type.Literal(api)))),
  },
  { additionalProperties: false },
);

/** Retries, backoff and circuit breakers of the router (docs/providers.md). */
export const RoutingSchema = Type.Object(
  {
    /** Extra attempts on the same deployment after a retryable failure, before falling back to the next. */
    retries: Type.Integer({ minimum: 0, maximum: 5 }),
    backoff_ms: Type.Integer({ minimum: 0, maximum: 60_000 }),
    max_backoff_ms: Type.Integer({ minimum: 0, maximum: 60_000 }),
    /** Consecutive failures that open a deployment's circuit. */
    breaker_failures: PositiveInt,
    /** How long an open circuit keeps the deployment out before it is probed back. */
    breaker_cooldown_ms: PositiveInt,
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
        request_timeout_ms: PositiveInt,
        cors_origins: Type.Array(Type.String()),
        trust_proxy: Type.Boolean(),
        /** Wrong admin tokens per client address within 15 minutes before that address gets 429 on /admin and /metrics. */
        admin_auth_max_failures: PositiveInt,
        /**
         * The gateway's public address for the links it builds: emailed links, Stripe's return (`TOLLGATE_PUBLIC_URL`).
         * Unset, a request's own `Host` is used only if `public_hosts` lists it or it is a loopback address.
         */
        public_url: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+/?$' })),
        /** Without `public_url`, the hosts (`name[:port]`) a link may be built for (`TOLLGATE_PUBLIC_HOSTS`, comma-separated). */
        public_hosts: Type.Array(Type.String({ pattern: '^[A-Za-z0-9.-]+(:[0-9]{1,5})?$' })),
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
        /** How long a request refused only because of other holds in flight waits for them (0: never). */
        wait_for_holds_ms: Type.Integer({ minimum: 0, maximum: 60_000 }),
        /** Requests of one account waiting for holds at once; the next is refused at once. */
        waiters_per_account: Type.Integer({ minimum: 1, maximum: 1_000 }),
        /** Bounds on every auto-recharge, whoever set it up (docs/configuration.md#credits). */
        auto_recharge: Type.Object(
          {
            /** The largest `auto_recharge.amount` an account may have, USD. */
            max_amount: Type.Number({ exclusiveMinimum: 0 }),
            /** Auto-recharges per account per UTC day. */
            max_per_day: PositiveInt,
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    default_plan: Type.String({ minLength: 1 }),
    plans: Type.Record(Type.String({ minLength: 1 }), PlanSchema),
    providers: Type.Record(Type.String({ pattern: '^[a-z0-9][a-z0-9_-]*$' }), ProviderSettingsSchema),
    default_models: Type.Boolean(),
    models: Type.Array(ModelSchema),
    routing: RoutingSchema,
    /** Webhook delivery (docs/webhooks.md). */
    webhooks: Type.Object(
      {
        /** Allow webhook URLs that resolve to loopback, private, link-local or metadata addresses. */
        allow_private_urls: Type.Boolean(),
        /** How often the delivery worker looks for due deliveries (it is also woken by new events and retries). */
        poll_interval_ms: Type.Integer({ minimum: 10, maximum: 60_000 }),
        /** Deliveries in flight at once, per process. */
        concurrency: Type.Integer({ minimum: 1, maximum: 1_000 }),
        /** Deliveries in flight at once to one webhook, all processes together (counted at claim time). */
        max_in_flight_per_endpoint: Type.Integer({ minimum: 1, maximum: 1_000 }),
        /** Deliveries in flight at once to one account's webhooks, all processes together. */
        max_in_flight_per_account: Type.Integer({ minimum: 1, maximum: 10_000 }),
        /** How often each process reloads the registrations (changes made through another replica). */
        refresh_ms: Type.Integer({ minimum: 100, maximum: 600_000 }),
        /** Events held in memory while the database cannot take them; beyond this the oldest are dropped. */
        max_buffered: PositiveInt,
      },
      { additionalProperties: false },
    ),
    /** The web dashboard at /dashboard (docs/dashboard.md). */
    dashboard: Type.Object(
      {
        enabled: Type.Boolean(),
        /** Whether anyone may sign up (a new free account with the sign-up grant). */
        signup: Type.Boolean(),
        session_ttl_hours: PositiveInt,
        /** Sign-in and sign-up attempts per minute per email (ten times as many per client address). */
        signin_attempts_per_minute: PositiveInt,
      },
      { additionalProperties: false },
    ),
    /** Self-serve sign-up in the dashboard (docs/dashboard.md#sign-up). */
    signup: Type.Object(
      {
        /** Without SMTP, whether a new account gets the sign-up grant at once (else it starts at 0 USD). */
        grant_without_verification: Type.Boolean(),
        /** Sign-up attempts per client address per hour. */
        per_ip_per_hour: PositiveInt,
        /** How long an emailed verification link works. */
        verification_ttl_hours: PositiveInt,
      },
      { additionalProperties: false },
    ),
    /** Users buying credit themselves (docs/payments.md); off without `payments.stripe.secret_key`. */
    payments: Type.Object(
      {
        stripe: Type.Object(
          {
            /** `STRIPE_SECRET_KEY` (sk_live_… or sk_test_…); unset, purchasing is off. */
            secret_key: Type.Optional(Type.String({ minLength: 1 })),
            /** `STRIPE_WEBHOOK_SECRET` (whsec_…): verifies the signature of `POST /webhooks/stripe`. */
            webhook_secret: Type.Optional(Type.String({ minLength: 1 })),
            /** `STRIPE_API_BASE`: another server speaking Stripe's API (tests); unset, Stripe's own. */
            api_base: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+/?$' })),
          },
          { additionalProperties: false },
        ),
        /** Bounds of one purchase, USD (whole cents). */
        purchase: Type.Object(
          {
            min_amount: Type.Number({ minimum: 0.5 }),
            max_amount: Type.Number({ exclusiveMinimum: 0 }),
            /** A purchase still pending this long is asked of Stripe by the periodic check (docs/payments.md). */
            pending_check_after_seconds: PositiveInt,
            /** How often each process runs that check. */
            pending_check_interval_seconds: PositiveInt,
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    /** Outgoing email (verification links); with a URL, sign-up grants wait for a verified email. */
    smtp: Type.Object(
      {
        /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://host:465 (`SMTP_URL`). */
        url: Type.Optional(Type.String({ pattern: '^smtps?://' })),
        /** The From header (`SMTP_FROM`). */
        from: Type.String({ minLength: 3 }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type PlanConfig = Static<typeof PlanSchema>;
export type Capabilities = Static<typeof CapabilitiesSchema>;
export type ProviderSettings = Static<typeof ProviderSettingsSchema>;
export type DeploymentConfig = Static<typeof DeploymentSchema>;
export type RoutingConfig = Static<typeof RoutingSchema>;
