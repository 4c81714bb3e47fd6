/** JSON shapes of accounts, keys and ledger entries, shared by the admin API (and later the dashboard). */
import { keyLimitStatus } from '../auth/index.js';
import { rechargeProcessor, selfServeRecharge, usdNumber, type PaymentProcessors } from '../billing/index.js';
import type { AccountRecord, AccountSettings, KeyRecord, LedgerRecord, UsageTotals } from '../storage/index.js';
import type { HttpDeps } from './deps.js';

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A key as every path shows it (never the key itself): what it is, its governance, and where it stands now. */
export function renderKey(key: KeyRecord): Record<string, unknown> {
  const status = keyLimitStatus(key, Date.now());
  return {
    id: key.id,
    object: 'api_key',
    account_id: key.accountId,
    name: key.name,
    hint: key.hint,
    environment: key.environment,
    permissions: key.permissions,
    models: key.models,
    spend_limit: key.spendLimitNano === null ? null : usdNumber(key.spendLimitNano),
    spent: usdNumber(key.spentNano),
    limit: status.limitNano === null ? null : usdNumber(status.limitNano),
    limit_reset: status.reset,
    limit_remaining: status.remainingNano === null ? null : usdNumber(status.remainingNano),
    usage: usdNumber(status.usedNano),
    limit_resets_at: iso(status.resetsAt),
    expires_at: iso(key.expiresAt),
    requests_per_minute: key.requestsPerMinute,
    tokens_per_minute: key.tokensPerMinute,
    allowed_ips: key.allowedIps,
    owner: key.ownerUserId === null ? null : { id: key.ownerUserId, email: key.ownerEmail },
    created: seconds(key.createdAt),
    last_used: seconds(key.lastUsedAt),
    revoked: key.revokedAt !== null,
    revoked_at: seconds(key.revokedAt),
  };
}

export function renderAccount(account: AccountRecord, deps: Pick<HttpDeps, 'limitsFor'>): Record<string, unknown> {
  const limits = deps.limitsFor(account);
  const { settings } = account;
  return {
    id: account.id,
    object: 'account',
    email: account.email,
    plan: account.plan,
    balance: { credits: usdNumber(account.balanceNano), currency: 'USD' },
    created: seconds(account.createdAt),
    overrides: {
      requests_per_minute: settings.requestsPerMinute ?? null,
      tokens_per_minute: settings.tokensPerMinute ?? null,
      daily_limit:
        settings.dailyLimitNano === undefined
          ? null
          : settings.dailyLimitNano === null
            ? 'none'
            : usdNumber(settings.dailyLimitNano),
    },
    limits: {
      requests_per_minute: limits.requestsPerMinute,
      tokens_per_minute: limits.tokensPerMinute,
      daily_limit: limits.dailyLimitNano === null ? null : usdNumber(limits.dailyLimitNano),
    },
    auto_recharge: {
      enabled: settings.autoRecharge.enabled,
      threshold: usdNumber(settings.autoRecharge.thresholdNano),
      amount: usdNumber(settings.autoRecharge.amountNano),
    },
    billing: settings.billing
      ? {
          processor: settings.billing.processor,
          monthly_ceiling:
            settings.billing.monthlyCeilingNano === null ? null : usdNumber(settings.billing.monthlyCeilingNano),
        }
      : null,
    low_balance_thresholds: settings.lowBalanceThresholdsNano?.map(usdNumber) ?? null,
    closed_at: seconds(account.closedAt),
  };
}

/**
 * Auto-recharge seen by the account's own user (`/v1/credits`, dashboard): on only when a processor can run it,
 * whether they may change it themselves (with the reason when not), and why the gateway turned it off, if it did.
 */
export function renderOwnAutoRecharge(
  settings: AccountSettings,
  processors: PaymentProcessors,
  savedPaymentMethod: boolean,
) {
  const { available, reason } = selfServeRecharge(settings, processors, savedPaymentMethod);
  return {
    enabled: settings.autoRecharge.enabled && rechargeProcessor(settings, processors) !== undefined,
    threshold: usdNumber(settings.autoRecharge.thresholdNano),
    amount: usdNumber(settings.autoRecharge.amountNano),
    available,
    unavailable_reason: reason,
    disabled_reason: settings.autoRecharge.disabledReason ?? null,
  };
}

export function renderLedgerEntry(entry: LedgerRecord): Record<string, unknown> {
  return {
    id: entry.id,
    object: 'ledger_entry',
    kind: entry.kind,
    amount: usdNumber(entry.amountNano),
    balance_after: usdNumber(entry.balanceAfterNano),
    request_id: entry.requestId,
    key_id: entry.keyId,
    model: entry.model,
    prompt_tokens: entry.promptTokens,
    completion_tokens: entry.completionTokens,
    note: entry.note,
    created: seconds(entry.createdAt),
  };
}

/** Usage totals as GET /v1/credits and GET /v1/key show them. */
export function renderUsage(totals: UsageTotals) {
  return {
    credits_used: usdNumber(totals.creditsNano),
    requests: totals.requests,
    tokens: {
      prompt: totals.promptTokens,
      completion: totals.completionTokens,
      total: totals.promptTokens + totals.completionTokens,
    },
  };
}
