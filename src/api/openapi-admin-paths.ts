/** The OpenAPI paths of the admin API (`/admin`), authorized by the admin token. */
import {
  AddCreditsSchema,
  CreateAccountSchema,
  CreateKeySchema,
  PatchAccountSchema,
  PatchKeySchema,
  RefundPurchaseSchema,
} from '../admin/index.js';
import { json, operation, path, query, type Json } from './openapi-builder.js';
import { AuditListSchema } from './audit-schemas.js';
import { auditQuery } from './openapi-audit-paths.js';
import {
  AccountSchema,
  AccountWithKeysSchema,
  ApiKeySchema,
  CreatedAccountSchema,
  CreatedApiKeySchema,
  CreditAdjustmentSchema,
  CreditPurchaseSchema,
  CreditRefundSchema,
  LedgerEntrySchema,
  Page,
} from './schemas.js';

export function adminPaths(): Json {
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
        ok: json(Page(AccountSchema)),
      }),
      post: operation('admin', 'Create an account (with the sign-up grant) and its first live key', {
        ...admin,
        body: CreateAccountSchema,
        ok: json(CreatedAccountSchema),
        okStatus: 201,
      }),
    },
    '/admin/accounts/{id}': {
      get: operation('admin', 'An account with balance and keys', {
        ...admin,
        parameters: account,
        ok: json(AccountWithKeysSchema),
      }),
      patch: operation('admin', 'Change plan, limits, invoice billing, auto-recharge or low-balance thresholds', {
        ...admin,
        parameters: account,
        body: PatchAccountSchema,
        ok: json(AccountSchema),
      }),
    },
    '/admin/accounts/{id}/keys': {
      post: operation('admin', 'Create a key (shown once)', {
        ...admin,
        parameters: account,
        body: CreateKeySchema,
        ok: json(CreatedApiKeySchema),
        okStatus: 201,
      }),
    },
    '/admin/accounts/{id}/credits': {
      post: operation('admin', 'Top up (a negative amount is a correction)', {
        ...admin,
        parameters: account,
        body: AddCreditsSchema,
        ok: json(CreditAdjustmentSchema),
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
        ok: json(Page(LedgerEntrySchema)),
      }),
    },
    '/admin/accounts/{id}/audit': {
      get: operation(
        'admin',
        "The account's audit log, newest first (a closed account's too), as `GET /v1/audit` pages it",
        {
          ...admin,
          parameters: [...account, ...auditQuery()],
          ok: json(AuditListSchema),
        },
      ),
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
          ok: json(CreditRefundSchema),
        },
      ),
    },
    '/admin/keys/{id}': {
      patch: operation('admin', "Change a key's name, limit, expiry, rate limits or allowed addresses", {
        ...admin,
        parameters: [path('id', 'Key id (`key_...`)')],
        body: PatchKeySchema,
        ok: json(ApiKeySchema),
      }),
      delete: operation('admin', 'Revoke a key', {
        ...admin,
        parameters: [path('id', 'Key id (`key_...`)')],
        ok: json(ApiKeySchema),
      }),
    },
  };
}
