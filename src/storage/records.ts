/** The shapes storage hands out: plain data, money in bigint nano-USD, times in Unix milliseconds. */
import type { ActorType, Environment, LedgerKind, LimitReset, Permission, Role } from './schema.js';

export type { ActorType, Environment, LedgerKind, LimitReset, Permission, Role };

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
  /** When an owner closed it; null while open. */
  closedAt: number | null;
}

export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  hint: string;
  environment: Environment;
  permissions: Permission;
  models: string[];
  /** The key's spend limit (`limit`); null: none. */
  spendLimitNano: bigint | null;
  /** Spent with the key since it was made. */
  spentNano: bigint;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  /** When the spend limit starts again (UTC); null: never. */
  limitReset: LimitReset | null;
  /** Spent in the limit's period `period` (`periodOf`) as the lookup found it; `spentNano` when it never resets. */
  periodSpentNano: bigint;
  period: string;
  /** Unix ms after which the key is refused; null: never. */
  expiresAt: number | null;
  /** The key's own rate limits, below the account's; null: the account's alone. */
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  /** CIDRs (IPv4 and IPv6) the key may be used from; empty: any. */
  allowedIps: string[];
  /** The member who made the key; null for keys an operator made (they act for the account's owner). */
  ownerUserId: string | null;
  /** The owner's role in the key's account now; null without an owner, or when the owner is no longer a member. */
  ownerRole: Role | null;
  /** The owner's email (`users.email`); null without an owner. */
  ownerEmail: string | null;
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
