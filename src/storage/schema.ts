/**
 * Table types for Kysely. BIGINT columns give bigint on both dialects (SQLite with safe integers,
 * PostgreSQL's int8 parser), so money never passes through a float on its way out of the database.
 */
import type { ColumnType } from 'kysely';

// The values a column can hold belong to the table types: the stores import them from here (and re-export them
// under the names the rest of the code uses), so this file imports nothing from the stores.

export type Environment = 'live' | 'test';
export type Permission = 'full' | 'read_only' | 'project' | 'management';
/** A member's role in an account (migration 016). */
export type Role = 'owner' | 'admin' | 'member' | 'billing';
/** When a key's spend limit starts again, in UTC; null: never. */
export type LimitReset = 'daily' | 'weekly' | 'monthly';
/** Who made a change the audit log records. */
export type ActorType = 'user' | 'key' | 'operator' | 'processor' | 'system';
export type LedgerKind = 'grant' | 'topup' | 'recharge' | 'debit' | 'refund' | 'dispute' | 'correction';
export type EmailStatus = 'pending' | 'verified' | 'unverified';
export type DeliveryStatus = 'pending' | 'delivering' | 'succeeded' | 'dead' | 'failed';
/** `pending` while the claiming request runs; `done` once its answer is stored. */
export type IdempotencyState = 'pending' | 'done';
export type PurchaseStatus = 'pending' | 'paid' | 'expired' | 'failed';
export type RechargeStatus = 'pending' | 'succeeded' | 'failed';

type Big = ColumnType<bigint, bigint | number, bigint | number>;
type NullableBig = ColumnType<bigint | null, bigint | number | null, bigint | number | null>;

export interface MetaTable {
  key: string;
  value: string;
}

export interface AccountsTable {
  id: string;
  email: string;
  plan: string;
  balance_nano: Big;
  /** Increases with every balance change; caches keep the highest version they saw. */
  version: Big;
  /** JSON: limit overrides, auto-recharge and low-balance settings. */
  settings: string;
  created_at: Big;
  /** Set when an owner closed the account: no keys, members or webhooks are left, and none can be added. */
  closed_at: NullableBig;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  key_hash: string;
  hint: string;
  environment: Environment;
  permissions: Permission;
  /** JSON array of model ids (project keys); empty = all. */
  models: string;
  spend_limit_nano: NullableBig;
  spent_nano: Big;
  created_at: Big;
  last_used_at: NullableBig;
  revoked_at: NullableBig;
  /** Governance (migration 016): when `spend_limit_nano` starts again, expiry, own rate limits, addresses, owner. */
  limit_reset: LimitReset | null;
  expires_at: NullableBig;
  requests_per_minute: NullableBig;
  tokens_per_minute: NullableBig;
  /** JSON array of CIDRs; empty = any address. */
  allowed_ips: ColumnType<string, string | undefined, string>;
  owner_user_id: string | null;
}

export interface LedgerTable {
  id: string;
  account_id: string;
  kind: LedgerKind;
  amount_nano: Big;
  balance_after_nano: Big;
  request_id: string | null;
  key_id: string | null;
  model: string | null;
  prompt_tokens: NullableBig;
  completion_tokens: NullableBig;
  note: string | null;
  created_at: Big;
  /** JSON: a debit's tokens per kind and the prices applied (migration 011); null without it. */
  billing: string | null;
  /** A debit's endpoint, its answer's id, and its detail as JSON (`RequestDetail`; migration 015). */
  endpoint: string | null;
  answer_id: string | null;
  detail: string | null;
}

export interface UsageDailyTable {
  account_id: string;
  day: string;
  environment: string;
  model: string;
  requests: Big;
  prompt_tokens: Big;
  completion_tokens: Big;
  credits_nano: Big;
}

/** Each key's usage per UTC day, test keys included (migration 015). */
export interface UsageDailyKeysTable {
  key_id: string;
  day: string;
  account_id: string;
  requests: Big;
  prompt_tokens: Big;
  completion_tokens: Big;
  credits_nano: Big;
}

export interface InvoicesTable {
  id: string;
  account_id: string;
  month: string;
  kind: string;
  amount_nano: Big;
  processor: string;
  reference: string;
  created_at: Big;
}

export interface EmailVerificationsTable {
  token_hash: string;
  account_id: string;
  user_id: string | null;
  password_hash: string;
  created_at: Big;
  expires_at: Big;
  used_at: NullableBig;
}

/** The mailbox of each account credited the sign-up grant (storage/mailboxes.ts): one grant per mailbox. */
export interface SignupGrantMailboxesTable {
  mailbox: string;
  account_id: string;
  created_at: Big;
}

export interface SignupAttemptsTable {
  ip: string;
  created_at: Big;
}

export interface DashboardSessionsTable {
  token_hash: string;
  /** The account the session is looking at (the account switcher changes it). */
  account_id: string;
  user_id: string | null;
  csrf_token: string;
  created_at: Big;
  expires_at: Big;
}

/** The people who sign in to the dashboard (migration 016). */
export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  email_status: ColumnType<EmailStatus, EmailStatus | undefined, EmailStatus>;
  created_at: Big;
}

export interface MembersTable {
  account_id: string;
  user_id: string;
  role: Role;
  created_at: Big;
}

export interface InvitationsTable {
  id: string;
  account_id: string;
  email: string;
  role: Role;
  token_hash: string;
  invited_by: string | null;
  created_at: Big;
  expires_at: Big;
  accepted_at: NullableBig;
  revoked_at: NullableBig;
}

export interface AuditLogTable {
  id: string;
  account_id: string;
  actor_type: ActorType;
  actor_id: string | null;
  /** `<target>.<verb>`, e.g. `key.create`, `member.role`, `webhook.delete`. */
  action: string;
  target_type: string;
  target_id: string | null;
  /** JSON of the target before and after the change; null where there was none. */
  before: string | null;
  after: string | null;
  ip: string | null;
  created_at: Big;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  url: string;
  secret: string;
  events: string;
  headers: string;
  timeout_ms: Big;
  retry_config: string;
  description: string | null;
  created_at: Big;
  updated_at: Big;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  attempts: Big;
  next_attempt_at: Big;
  lease_token: string | null;
  lease_until: NullableBig;
  last_status: NullableBig;
  last_error: string | null;
  created_at: Big;
  updated_at: Big;
  completed_at: NullableBig;
}

export interface Database {
  meta: MetaTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  ledger: LedgerTable;
  usage_daily: UsageDailyTable;
  usage_daily_keys: UsageDailyKeysTable;
  invoices: InvoicesTable;
  users: UsersTable;
  members: MembersTable;
  invitations: InvitationsTable;
  audit_log: AuditLogTable;
  dashboard_sessions: DashboardSessionsTable;
  email_verifications: EmailVerificationsTable;
  signup_attempts: SignupAttemptsTable;
  signup_grant_mailboxes: SignupGrantMailboxesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  idempotency_keys: IdempotencyKeysTable;
  credit_purchases: CreditPurchasesTable;
  payment_events: PaymentEventsTable;
  payment_customers: PaymentCustomersTable;
  card_recharges: CardRechargesTable;
  payment_reversals: PaymentReversalsTable;
  responses: ResponsesTable;
}

export interface IdempotencyKeysTable {
  account_id: string;
  idempotency_key: string;
  fingerprint: string;
  state: IdempotencyState;
  claim: string;
  request_id: string;
  response: string | null;
  created_at: Big;
  expires_at: Big;
}

export interface CreditPurchasesTable {
  id: string;
  account_id: string;
  amount_nano: Big;
  currency: string;
  status: PurchaseStatus;
  processor: string;
  checkout_session_id: string | null;
  checkout_url: string | null;
  payment_intent_id: string | null;
  receipt_url: string | null;
  created_at: Big;
  paid_at: NullableBig;
}

/** Payment processor events already applied, by the processor's event id. */
export interface PaymentEventsTable {
  id: string;
  processor: string;
  type: string;
  received_at: Big;
}

/** An account's customer at the payment processor and the payment method saved for off-session charges. */
export interface PaymentCustomersTable {
  account_id: string;
  processor: string;
  customer_id: string;
  payment_method_id: string | null;
  updated_at: Big;
}

/** Auto-recharges charged to a saved card, one row per attempt (at most one pending per account). */
export interface CardRechargesTable {
  id: string;
  account_id: string;
  amount_nano: Big;
  status: RechargeStatus;
  processor: string;
  payment_intent_id: string | null;
  failure: string | null;
  created_at: Big;
  claimed_at: Big;
  settled_at: NullableBig;
  receipt_url: string | null;
}

/** How much of one payment a refund or a dispute has taken back, per the ledger's debit. */
export interface PaymentReversalsTable {
  id: string;
  account_id: string;
  processor: string;
  kind: string;
  payment_reference: string;
  amount_nano: Big;
  final: number;
  updated_at: Big;
}

export interface ResponsesTable {
  id: string;
  account_id: string;
  provider_id: string;
  stateful: number;
  created_at: Big;
  /** Input plus output tokens, carried into a request that continues the response (migration 011); null until known. */
  context_tokens: NullableBig;
}
