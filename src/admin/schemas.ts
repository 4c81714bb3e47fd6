/**
 * Admin request schemas (TypeBox = JSON Schema), validated by Fastify after the admin token check. They are
 * strict: a misspelt field (say `permission: "read_only"`) is a 400, never silently a full key.
 */
import { Type, type Static } from '@sinclair/typebox';
import { PERMISSIONS } from '../auth/permissions.js';

export const CreateAccountSchema = Type.Object(
  {
    email: Type.String({ minLength: 3 }),
    plan: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const NullableUsd = (description: string) =>
  Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description }));
const NullableRate = (description: string) =>
  Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description }));

/**
 * A key's governance, under the names hosted gateways use: the same on creation and on PATCH, over every path (admin
 * API, CLI, dashboard, /v1/keys). The checks a schema cannot make (exact USD, CIDRs, a future date, the account's
 * rate limits) are in ./key-fields.ts.
 */
export const KeyGovernanceFields = {
  name: Type.Optional(Type.String({ maxLength: 200 })),
  limit: NullableUsd('USD the key may spend (per `limit_reset` period); null: no limit of its own'),
  spend_limit: NullableUsd('Former name of `limit`'),
  limit_reset: Type.Optional(
    Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly'), Type.Null()], {
      description: 'When the limit starts again (UTC: midnight, Monday, the 1st); null: never',
    }),
  ),
  expires_at: Type.Optional(
    Type.Union([Type.String({ description: 'ISO 8601, e.g. 2027-01-31T00:00:00Z' }), Type.Null()], {
      description: 'When the key stops working; null: never',
    }),
  ),
  requests_per_minute: NullableRate("The key's own requests per minute (at most the account's); null: the account's"),
  tokens_per_minute: NullableRate("The key's own tokens per minute (at most the account's); null: the account's"),
  allowed_ips: Type.Optional(
    Type.Array(Type.String(), {
      maxItems: 100,
      description: 'CIDRs or addresses (IPv4, IPv6) the key may be used from; empty: anywhere',
    }),
  ),
};

export const CreateKeySchema = Type.Object(
  {
    ...KeyGovernanceFields,
    environment: Type.Optional(Type.Union([Type.Literal('live'), Type.Literal('test')])),
    permissions: Type.Optional(Type.Union(PERMISSIONS.map((permission) => Type.Literal(permission)))),
    models: Type.Optional(Type.Array(Type.String(), { maxItems: 100 })),
  },
  { additionalProperties: false },
);
export type NewKeyRequest = Static<typeof CreateKeySchema>;

export const PatchKeySchema = Type.Object(KeyGovernanceFields, { additionalProperties: false });
export type KeyPatch = Static<typeof PatchKeySchema>;

export const AddCreditsSchema = Type.Object(
  {
    amount: Type.Number(),
    note: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

/** An operator's refund of a purchase through Stripe; without `amount`, what is left of the purchase. */
export const RefundPurchaseSchema = Type.Object(
  {
    amount: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  },
  { additionalProperties: false },
);

const NullablePositive = Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]));
export const PatchAccountSchema = Type.Object(
  {
    plan: Type.Optional(Type.String()),
    requests_per_minute: NullablePositive,
    tokens_per_minute: NullablePositive,
    /** USD; null returns to the plan's limit; "none" removes the daily limit for this account. */
    daily_limit: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null(), Type.Literal('none')])),
    auto_recharge: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          /** USD. */
          threshold: Type.Optional(Type.Number({ minimum: 0 })),
          /** USD. */
          amount: Type.Optional(Type.Number({ minimum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** USD. */
    low_balance_thresholds: Type.Optional(
      Type.Union([Type.Array(Type.Number({ minimum: 0 }), { maxItems: 10 }), Type.Null()]),
    ),
    billing: Type.Optional(
      Type.Union(
        [
          Type.Object(
            {
              processor: Type.Optional(
                Type.Literal('invoice', {
                  description: 'Charge auto-recharges on a monthly invoice (post-paid accounts)',
                }),
              ),
              monthly_ceiling: Type.Optional(
                Type.Number({ minimum: 0, description: 'USD that auto-recharges may add per UTC calendar month' }),
              ),
            },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        {
          description:
            'How auto-recharges are paid; null takes the account off invoice billing and turns auto-recharge off',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type AccountPatch = Static<typeof PatchAccountSchema>;
export type AutoRechargePatch = NonNullable<AccountPatch['auto_recharge']>;
/** null takes the account off operator billing (and turns its auto-recharge off). */
export type BillingPatch = Exclude<AccountPatch['billing'], undefined>;
