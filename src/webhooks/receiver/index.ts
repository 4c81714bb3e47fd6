/**
 * The receiver library (`tollgate/webhooks`): verifies a delivery by the receiver rules 1-6 of spec 6.2 exactly,
 * and signs one (for tests and for anyone who sends the same format). Depends on node:crypto only.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type {
  HeaderSource,
  KnownEventType,
  KnownWebhookEvent,
  VerifyFailureReason,
  VerifyOptions,
  VerifyResult,
  WebhookEvent,
} from './types.js';

export type * from './types.js';

export const SIGNATURE_HEADER = 'x-webhook-signature';
export const TIMESTAMP_HEADER = 'x-webhook-timestamp';
export const ALGORITHM_HEADER = 'x-webhook-algorithm';
export const DEFAULT_MAX_AGE_SECONDS = 300;
/** Rule 5: the envelope's own `timestamp` must be within this much of now. */
export const PAYLOAD_WINDOW_SECONDS = 3600;

/** Hex HMAC-SHA-256 of `<timestamp>.<raw body>`. */
export function computeSignature(secret: string, timestamp: number | string, rawBody: string | Uint8Array): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`${timestamp}.`);
  hmac.update(rawBody);
  return hmac.digest('hex');
}

/** The headers of a delivery of `rawBody` signed with `secret` (timestamp: now, in Unix seconds). */
export function signWebhook(
  rawBody: string | Uint8Array,
  secret: string,
  options: { timestamp?: number } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    [SIGNATURE_HEADER]: computeSignature(secret, timestamp, rawBody),
    [TIMESTAMP_HEADER]: String(timestamp),
    [ALGORITHM_HEADER]: 'sha256',
  };
}

/**
 * Checks a delivery: `rawBody` must be the exact bytes received (not re-serialised JSON). Returns the typed
 * event, or the reason of the first rule that failed.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options: VerifyOptions = {},
): VerifyResult {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError('verifyWebhook needs the raw request body (string or Buffer), not parsed JSON');
  }
  const maxAge = options.maxAgeSeconds ?? DEFAULT_MAX_AGE_SECONDS;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const signature = header(headers, SIGNATURE_HEADER);
  const timestamp = header(headers, TIMESTAMP_HEADER);

  // Rule 1.
  if (!signature) return fail('missing_signature', 'The X-Webhook-Signature header is missing');
  if (!timestamp) return fail('missing_timestamp', 'The X-Webhook-Timestamp header is missing');
  // Rule 2.
  if (!/^\d{1,15}$/.test(timestamp)) return fail('invalid_timestamp', 'X-Webhook-Timestamp is not an integer');
  // Rule 3.
  if (now - Number(timestamp) > maxAge)
    return fail('timestamp_too_old', `X-Webhook-Timestamp is older than ${maxAge} seconds`);
  // Rule 4.
  const algorithm = (header(headers, ALGORITHM_HEADER) ?? 'sha256').toLowerCase();
  if (algorithm !== 'sha256') return fail('unsupported_algorithm', `Unsupported X-Webhook-Algorithm "${algorithm}"`);
  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody), 'utf8');
  const given = Buffer.from(signature.trim().toLowerCase(), 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return fail('invalid_signature', 'The signature does not match');
  }
  // Rule 5.
  let payload: unknown;
  try {
    payload = JSON.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8'));
  } catch {
    return fail('invalid_payload', 'The body is not JSON');
  }
  if (!isObject(payload)) return fail('invalid_payload', 'The body is not a JSON object');
  const { id, timestamp: sentAt, event: type, data } = payload;
  if (!isText(id)) return fail('invalid_payload', 'The envelope has no "id"');
  if (!isText(sentAt)) return fail('invalid_payload', 'The envelope has no "timestamp"');
  if (!isText(type)) return fail('invalid_payload', 'The envelope has no "event"');
  if (!isObject(data)) return fail('invalid_payload', 'The envelope has no "data" object');
  const sent = Date.parse(sentAt);
  if (Number.isNaN(sent)) return fail('invalid_payload', 'The envelope "timestamp" is not an ISO 8601 time');
  if (Math.abs(now * 1000 - sent) > PAYLOAD_WINDOW_SECONDS * 1000) {
    return fail('stale_payload', 'The envelope "timestamp" is not within 1 hour of now');
  }
  // Rule 6.
  const missing = missingFields(type, data);
  if (missing.length) return fail('missing_fields', `${type} requires ${missing.join(', ')}`);
  return { ok: true, event: { ...payload, id, timestamp: sentAt, event: type, data } };
}

/** Narrows a verified event to one known type. */
export function isEventType<T extends KnownEventType>(
  event: WebhookEvent,
  type: T,
): event is Extract<KnownWebhookEvent, { event: T }> {
  return event.event === type;
}

const REQUIRED: Record<string, readonly string[]> = {
  'llm.completion': ['requestId', 'prompt', 'completion', 'model'],
  'llm.error': ['requestId', 'error.code', 'error.message'],
};

function missingFields(type: string, data: Record<string, unknown>): string[] {
  return (REQUIRED[type] ?? []).filter((path) => {
    let value: unknown = data;
    for (const part of path.split('.')) value = isObject(value) ? value[part] : undefined;
    return typeof value !== 'string';
  });
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (hasGet(headers)) return headers.get(name) || undefined;
  let value = headers[name];
  if (value === undefined) {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : headers[key];
  }
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

/** A `Headers` (fetch) rather than a plain record (Node). */
function hasGet(headers: HeaderSource): headers is { get(name: string): string | null } {
  return typeof headers.get === 'function';
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(reason: VerifyFailureReason, message: string): VerifyResult {
  return { ok: false, reason, message };
}
