/** The events tollgate delivers, seen by a receiver after `verifyWebhook`. */

export interface WebhookTokens {
  prompt: number;
  completion: number;
  total: number;
}

interface RequestData {
  requestId: string;
  conversationId?: string;
  userId: string;
  model: string;
  metadata?: Record<string, unknown>;
}

export interface WebhookDataByType {
  'llm.completion': RequestData & { prompt: string; completion: string; tokens?: WebhookTokens };
  'llm.error': RequestData & { prompt?: string; error: { code: string; message: string }; tokens?: WebhookTokens };
  'llm.streaming.start': RequestData & { streamId: string; prompt?: string };
  'llm.streaming.chunk': { requestId: string; streamId: string; chunkIndex: number; content: string };
  'llm.streaming.end': { requestId: string; streamId: string; totalChunks: number; model?: string; userId?: string };
  'credit.low_balance': {
    balance: { credits: number; currency: 'USD' };
    threshold: number;
    api_key_id: string | null;
    account_id: string;
  };
  'credit.recharge_failed': {
    account_id: string;
    recharge_id: string | null;
    amount: number;
    currency: 'USD';
    code: string;
    decline_code: string | null;
    message: string;
    payment_intent_id: string | null;
    consecutive_failures: number;
    auto_recharge_disabled: boolean;
  };
  /** Sent by `POST /v1/webhooks/{id}/test`. */
  'webhook.test': { webhookId: string; message: string };
}

export type KnownEventType = keyof WebhookDataByType;

/** The envelope of spec 6.2; `credit.low_balance` also carries spec 6.1's `type` and `created`. */
export type KnownWebhookEvent = {
  [T in KnownEventType]: {
    id: string;
    timestamp: string;
    event: T;
    data: WebhookDataByType[T];
  } & (T extends 'credit.low_balance' ? { type: 'credit.low_balance'; created: number } : unknown);
}[KnownEventType];

/** A type this version of the library does not know yet (valid under rules 5 and 6, passed through). */
export interface OtherWebhookEvent {
  id: string;
  timestamp: string;
  event: string;
  data: Record<string, unknown>;
}

export type WebhookEvent = KnownWebhookEvent | OtherWebhookEvent;

/** Why a delivery was rejected; each maps to one receiver rule of spec 6.2. */
export type VerifyFailureReason =
  /** Rule 1. */
  | 'missing_signature'
  | 'missing_timestamp'
  /** Rule 2. */
  | 'invalid_timestamp'
  /** Rule 3. */
  | 'timestamp_too_old'
  /** Rule 4 (an `X-Webhook-Algorithm` other than sha256 cannot be checked either). */
  | 'unsupported_algorithm'
  | 'invalid_signature'
  /** Rule 5. */
  | 'invalid_payload'
  | 'stale_payload'
  /** Rule 6. */
  | 'missing_fields';

export type VerifyResult =
  { ok: true; event: WebhookEvent } | { ok: false; reason: VerifyFailureReason; message: string };

/** Node's `IncomingHttpHeaders`, a plain object, or a Fetch `Headers`. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyOptions {
  /** Rule 3's maximum age of `X-Webhook-Timestamp`, in seconds (default 300). */
  maxAgeSeconds?: number;
  /** The current time in Unix seconds (tests); default the clock. */
  now?: number;
}
