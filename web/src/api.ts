/** The dashboard's JSON API (same origin, session cookie); every state-changing call carries the CSRF token. */
let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

/** Called when the session has ended (expired, signed out elsewhere). */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export async function api<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`/dashboard/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (response.status === 204) return undefined as T;
  const data = (await response.json().catch(() => ({}))) as {
    error?: { message?: string; code?: string; param?: string | null };
  };
  if (!response.ok) {
    const error = data.error ?? {};
    if (error.code === 'not_signed_in') onSignedOut();
    throw new ApiError(
      error.message ?? `Request failed (${response.status})`,
      response.status,
      error.code ?? 'unknown',
      error.param ?? null,
    );
  }
  return data as T;
}

export interface SessionInfo {
  signed_in: boolean;
  email?: string;
  account_id?: string;
  csrf_token: string;
  signup_enabled: boolean;
  /** USD credited to a new account (signed-out answers only). */
  signup_credit?: number;
  /** Sign-up sends an email link that must be followed before the account can be used (SMTP configured). */
  verification_required?: boolean;
  /** Signed in: what the user's role in the current account may use, and the accounts it belongs to. */
  role?: string;
  capabilities?: string[];
  accounts?: Array<{ account_id: string; email: string; role: string }>;
  /** Signed in: the person (an account may have several). */
  user?: { id: string; email: string };
}

/** The kinds of key, as the API lists them (src/auth/permissions.ts). */
export const PERMISSIONS = ['full', 'read_only', 'project', 'management'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface ApiKey {
  id: string;
  name: string;
  hint: string;
  environment: 'live' | 'test';
  permissions: Permission;
  models: string[];
  spend_limit: number | null;
  spent: number;
  /** USD per `limit_reset` period; null: none. */
  limit: number | null;
  limit_reset: 'daily' | 'weekly' | 'monthly' | null;
  limit_remaining: number | null;
  /** Spent in the current period. */
  usage: number;
  limit_resets_at: string | null;
  expires_at: string | null;
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  allowed_ips: string[];
  owner: { id: string; email: string | null } | null;
  created: number;
  last_used: number | null;
  revoked: boolean;
  key?: string;
  /** The key's requests and credits today and this month (UTC); in the list only. */
  activity?: { daily: UsageTotals; monthly: UsageTotals };
}

export interface UsageTotals {
  credits_used: number;
  requests: number;
  tokens: { prompt: number; completion: number; total: number };
}

export interface AutoRecharge {
  enabled: boolean;
  threshold: number;
  amount: number;
  /** Whether this user may turn it on or change it; when not, `unavailable_reason` says why. */
  available: boolean;
  unavailable_reason: string | null;
  /** Why the gateway turned it off itself (failed card recharges); null once turned on again. */
  disabled_reason: string | null;
}

export interface Overview {
  email: string;
  environment: 'live' | 'test';
  balance: { credits: number; currency: string };
  usage: { daily: UsageTotals; monthly: UsageTotals };
  limits: {
    rate_limit: { requests_per_minute: number; tokens_per_minute: number };
    daily_limit: { credits: number; remaining: number } | null;
  };
  billing: { plan: string; next_billing_date: string; auto_recharge: AutoRecharge };
  low_balance_thresholds: number[];
}

export interface UsageRow {
  credits: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface UsageHistory {
  environment: string;
  days: Array<UsageRow & { day: string }>;
  models: Array<UsageRow & { model: string }>;
}

export interface LedgerEntry {
  id: string;
  kind: string;
  amount: number;
  balance_after: number;
  request_id: string | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  note: string | null;
  created: number;
}

/** One line of a charge's breakdown: a token kind priced per million, or a fee per request or unit. */
export interface BreakdownLine {
  kind: string;
  quantity: number;
  unit: 'token' | 'request' | 'unit';
  price_per_million?: number;
  price?: number;
  /** Exact decimal USD. */
  cost: string;
}

/** A request's charge explained (`GET generation?id=`); fields are null for requests made before they were kept. */
export interface Generation {
  id: string | null;
  answer_id: string | null;
  created: number;
  model: string | null;
  provider: string | null;
  endpoint: string | null;
  key: { id: string | null; name: string | null };
  streamed: boolean | null;
  cancelled: boolean | null;
  finish_reason: string | null;
  latency_ms: number | null;
  time_to_first_token_ms: number | null;
  tokens: Record<string, number | null>;
  cost: number;
  cost_nano: string;
  breakdown: {
    lines: BreakdownLine[];
    tier_above_prompt_tokens: number | null;
    service_tier: string | null;
    priced_nano: string;
    charged_nano: string;
  } | null;
  ledger_entry: { id: string; balance_after: number };
}

/** USD per 1,000 tokens of each kind, and fees per request, image and web search (absent: not charged apart). */
export interface Pricing {
  prompt?: number;
  completion?: number;
  input_cache_read?: number;
  input_cache_write?: number;
  input_cache_write_1h?: number;
  internal_reasoning?: number;
  request?: number;
  image?: number;
  web_search?: number;
}

export interface Model {
  id: string;
  provider: { id: string; name: string };
  pricing: Pricing & {
    unit: string;
    tiers?: Array<Pricing & { above_prompt_tokens: number }>;
    service_tiers?: Record<string, Pricing>;
    changes?: Array<Pricing & { effective_from: string }>;
    daily?: Array<Pricing & { from_utc: string; to_utc: string }>;
  };
  context_length: number;
  max_tokens: number;
  capabilities: Record<string, boolean>;
  performance: {
    avg_response_time: number | null;
    avg_tokens_per_second: number | null;
    uptime_percentage: number | null;
  };
  status: { active: boolean; message: string };
  aliases?: string[];
}

export interface List<T> {
  data: T[];
  has_more?: boolean;
  next_before?: string | null;
}

export interface Webhook {
  id: string;
  url: string;
  events: Array<{ type: string; filters?: Record<string, unknown> }>;
  timeout: number;
  retryConfig: { maxAttempts: number; initialDelay: number; maxDelay: number; backoffMultiplier: number };
  description: string | null;
  created: number;
  /** Only in the answer to its creation. */
  secret?: string;
}

export interface Delivery {
  id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'delivering' | 'succeeded' | 'dead' | 'failed';
  attempts: number;
  next_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created: number;
  completed_at: number | null;
}

export interface Purchasing {
  /** Whether this gateway sells credit; when not, `unavailable_reason` says why. */
  available: boolean;
  unavailable_reason: string | null;
  min_amount: number;
  max_amount: number;
  currency: string;
}

export interface Purchase {
  id: string;
  amount: number;
  currency: string;
  status: 'pending' | 'paid' | 'expired' | 'failed';
  checkout_url: string | null;
  receipt_url: string | null;
  created: number;
  paid_at: number | null;
}

/** A card auto-recharge: `payment_intent_id` is Stripe's reference, null when Stripe could not be reached. */
export interface Recharge {
  id: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
  failure_reason: string | null;
  payment_intent_id: string | null;
  receipt_url: string | null;
  created: number;
  settled_at: number | null;
}
