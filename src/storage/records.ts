/** The shapes storage hands out: plain data, money in bigint nano-USD, times in Unix milliseconds. */
import type { Environment, LedgerKind, Permission } from './schema.js';

export type { Environment, LedgerKind, Permission };

export interface AutoRecharge {
  enabled: boolean;
  thresholdNano: bigint;
  amountNano: bigint;
  /** Card recharges that failed in a row since the last success or the user turning it on. */
  failures?: number;
  /** Why the gateway turned auto-recharge off itself (after failed recharges); cleared when it is turned on. */
  disabledReason?: string;
}

/** How an account's auto-recharges are paid: set by an operator (invoice) or by a saved payment method. */
export interface RechargeBilling {
  /** Id of the payment processor that charges the account's auto-recharges. */
  processor: string;
  /** The most auto-recharges may add in one UTC calendar month; null: no ceiling. */
  monthlyCeilingNano: bigint | null;
}

export interface AccountSettings {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  /** undefined: the plan's limit; null: no daily limit for this account. */
  dailyLimitNano?: bigint | null;
  autoRecharge: AutoRecharge;
  /** undefined: no payment processor, so auto-recharge cannot run. */
  billing?: RechargeBilling;
  /** undefined: the configured default thresholds. */
  lowBalanceThresholdsNano?: bigint[];
}

export interface AccountRecord {
  id: string;
  email: string;
  plan: string;
  balanceNano: bigint;
  version: bigint;
  settings: AccountSettings;
  createdAt: number;
}

export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  hint: string;
  environment: Environment;
  permissions: Permission;
  models: string[];
  spendLimitNano: bigint | null;
  spentNano: bigint;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface LedgerRecord {
  id: string;
  accountId: string;
  kind: LedgerKind;
  amountNano: bigint;
  balanceAfterNano: bigint;
  requestId: string | null;
  keyId: string | null;
  model: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  note: string | null;
  createdAt: number;
  /** JSON text: the debit's tokens per kind and the prices applied, as its writer built it. */
  billing: string | null;
  /** A debit's endpoint (`/v1/chat/completions`) and the id its answer had; null before migration 015. */
  endpoint: string | null;
  answerId: string | null;
  /** JSON text: a debit's request detail (provider, latency, finish reason, ...), as its writer built it. */
  detail: string | null;
}

export interface UsageTotals {
  requests: number;
  promptTokens: number;
  completionTokens: number;
  creditsNano: bigint;
}
