/**
 * The admin API's answers (`/admin`, behind the admin token): accounts, API keys, credit adjustments, ledger entries
 * and refunds, as the routes render them (http/render.ts, http/routes/admin.ts). Each has an `$id`: a component of
 * the OpenAPI document, listed in `RESPONSE_SCHEMAS` of ./schemas.ts.
 */
import { Type, type Static } from '@sinclair/typebox';
import { PERMISSIONS } from '../auth/permissions.js';
import { Nullable, UnixSeconds, Usd } from '../wire/index.js';

const Literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    description ? { description } : {},
  );

/** An account's balance as the operator sees it (no `can_spend`: the balance says it). */
const AccountBalance = Type.Object({
  credits: Usd('Current balance; below zero after a refund or dispute'),
  currency: Type.Literal('USD'),
});

export const ApiKeySchema = Type.Object(
  {
    id: Type.String({ description: '`key_...`' }),
    object: Type.Literal('api_key'),
    account_id: Type.String(),
    name: Type.String(),
    hint: Type.String({ description: 'The start and the end of the key (`tg-live-abcd...wxyz`), to recognize it' }),
    environment: Literals(['live', 'test'] as const),
    permissions: Literals(PERMISSIONS),
    models: Type.Array(Type.String(), { description: 'The models a project key may use; empty: all' }),
    spend_limit: Nullable(Usd('Former name of `limit`')),
    spent: Usd('Spent with the key since it was made'),
    limit: Nullable(Usd('The most the key may spend in a `limit_reset` period; null: no limit of its own')),
    limit_reset: Nullable(
      Literals(['daily', 'weekly', 'monthly'] as const, 'UTC periods; null: the limit never resets'),
    ),
    limit_remaining: Nullable(Usd('What the limit leaves in this period; null: no limit')),
    usage: Usd('Spent in the current period (since it was made, for a limit that never resets)'),
    limit_resets_at: Nullable(Type.String({ description: 'ISO 8601: when the period ends; null: never' })),
    expires_at: Nullable(Type.String({ description: 'ISO 8601: when the key stops working; null: never' })),
    requests_per_minute: Nullable(Type.Integer({ description: "The key's own; null: the account's alone" })),
    tokens_per_minute: Nullable(Type.Integer({ description: "The key's own; null: the account's alone" })),
    allowed_ips: Type.Array(Type.String(), { description: 'Canonical CIDRs the key may be used from; empty: any' }),
    owner: Nullable(
      Type.Object(
        { id: Type.String({ description: '`usr_...`' }), email: Nullable(Type.String()) },
        { description: 'The member who made the key; null: made by the operator' },
      ),
    ),
    created: UnixSeconds,
    last_used: Nullable(UnixSeconds),
    revoked: Type.Boolean(),
    revoked_at: Nullable(UnixSeconds),
  },
  { $id: 'ApiKey', description: 'A key as listed: never the key itself' },
);

export const CreatedApiKeySchema = Type.Object(
  {
    ...ApiKeySchema.properties,
    key: Type.String({ description: 'The key (`tg-live-...`, `tg-test-...`): shown once' }),
  },
  { $id: 'CreatedApiKey' },
);

const accountFields = {
  id: Type.String({ description: '`acct_...`' }),
  object: Type.Literal('account'),
  email: Type.String(),
  plan: Type.String(),
  balance: AccountBalance,
  created: UnixSeconds,
  overrides: Type.Object(
    {
      requests_per_minute: Nullable(Type.Integer()),
      tokens_per_minute: Nullable(Type.Integer()),
      daily_limit: Type.Union([Usd('Daily limit'), Type.Literal('none'), Type.Null()], {
        description: "none: no daily limit for this account; null: the plan's",
      }),
    },
    { description: "The account's own limits; null: the plan's" },
  ),
  limits: Type.Object(
    {
      requests_per_minute: Type.Integer(),
      tokens_per_minute: Type.Integer(),
      daily_limit: Nullable(Usd('Daily limit; null: none')),
    },
    { description: 'The limits in force (plan and overrides)' },
  ),
  auto_recharge: Type.Object({
    enabled: Type.Boolean(),
    threshold: Usd('Recharge below this balance'),
    amount: Usd('Recharge by'),
  }),
  billing: Nullable(
    Type.Object(
      {
        processor: Type.String({ description: 'The payment processor that charges auto-recharges' }),
        monthly_ceiling: Nullable(Usd('The most auto-recharges may add in a UTC calendar month; null: no ceiling')),
      },
      { description: 'null: no payment processor, so auto-recharge cannot run' },
    ),
  ),
  low_balance_thresholds: Nullable(
    Type.Array(Usd('Threshold'), { description: 'null: the configured default thresholds' }),
  ),
  closed_at: Nullable(Type.Integer({ description: 'When an owner closed the account (Unix seconds); null: open' })),
};

export const AccountSchema = Type.Object(accountFields, { $id: 'Account' });

export const AccountWithKeysSchema = Type.Object(
  { ...accountFields, keys: Type.Array(ApiKeySchema) },
  { $id: 'AccountWithKeys' },
);

export const CreatedAccountSchema = Type.Object(
  {
    ...accountFields,
    api_key: Type.String({ description: 'The first live key: shown once' }),
    api_key_id: Type.String({ description: '`key_...`' }),
  },
  { $id: 'CreatedAccount' },
);

export const CreditAdjustmentSchema = Type.Object(
  {
    object: Type.Literal('credit_adjustment'),
    account_id: Type.String(),
    amount: Usd('The amount applied (a negative correction takes at most what the balance has)'),
    balance: AccountBalance,
  },
  { $id: 'CreditAdjustment' },
);

export const LedgerEntrySchema = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('ledger_entry'),
    kind: Literals(['grant', 'topup', 'recharge', 'debit', 'refund', 'dispute', 'correction'] as const),
    amount: Usd('Signed: credit above zero, debit below'),
    balance_after: Usd('The balance after the entry'),
    request_id: Nullable(Type.String()),
    key_id: Nullable(Type.String()),
    model: Nullable(Type.String()),
    prompt_tokens: Nullable(Type.Integer()),
    completion_tokens: Nullable(Type.Integer()),
    note: Nullable(Type.String()),
    created: UnixSeconds,
  },
  { $id: 'LedgerEntry' },
);

export const CreditRefundSchema = Type.Object(
  {
    id: Type.String({ description: "Stripe's refund id (`re_...`)" }),
    object: Type.Literal('credit_refund'),
    status: Nullable(Type.String({ description: "Stripe's refund status (succeeded, pending, ...)" })),
    account_id: Type.String(),
    purchase_id: Type.String(),
    amount_refunded: Usd('Refunded of the purchase in all'),
    debited: Usd('What this refund debited'),
    balance: AccountBalance,
  },
  { $id: 'CreditRefund' },
);

/** The admin API's named answers, for `RESPONSE_SCHEMAS`. */
export const ADMIN_SCHEMAS = [
  ApiKeySchema,
  CreatedApiKeySchema,
  AccountSchema,
  AccountWithKeysSchema,
  CreatedAccountSchema,
  CreditAdjustmentSchema,
  LedgerEntrySchema,
  CreditRefundSchema,
];

export type ApiKey = Static<typeof ApiKeySchema>;
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;
export type Account = Static<typeof AccountSchema>;
export type AccountWithKeys = Static<typeof AccountWithKeysSchema>;
export type CreatedAccount = Static<typeof CreatedAccountSchema>;
export type CreditAdjustment = Static<typeof CreditAdjustmentSchema>;
export type LedgerEntry = Static<typeof LedgerEntrySchema>;
export type CreditRefund = Static<typeof CreditRefundSchema>;
