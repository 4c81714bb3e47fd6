/**
 * One delivery attempt: POST of the signed envelope to the address resolved for this attempt, no redirects,
 * everything (connect, headers, body) within the webhook's `timeout`.
 */
import { Client } from 'undici';
import type { LookupFunction } from 'node:net';
import { messageOf } from '../errors/index.js';
import { signWebhook } from './receiver/index.js';
import { BlockedAddressError, resolveTarget, type Target } from './ssrf.js';

export interface DeliveryTarget {
  url: string;
  secret: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface AttemptOutcome {
  /** 2xx */
  ok: boolean;
  /** No response, 5xx, 429 or 408: worth another attempt. Anything else goes to the dead letters. */
  retryable: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

const USER_AGENT = 'tollgate-webhooks/1';
/** How much of a receiver's answer is read (and thrown away) before the connection is closed. */
const BODY_LIMIT = 64 * 1024;

export async function attemptDelivery(
  target: DeliveryTarget,
  payload: string,
  meta: { eventId: string; eventType: string },
  allowPrivate: boolean,
): Promise<AttemptOutcome> {
  const started = performance.now();
  const done = (outcome: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({
    ...outcome,
    durationMs: Math.round(performance.now() - started),
  });
  const url = new URL(target.url);
  const signal = AbortSignal.timeout(target.timeoutMs);
  let resolved: Target;
  try {
    resolved = await resolveTarget(url, allowPrivate);
  } catch (error) {
    if (error instanceof BlockedAddressError)
      return done({ ok: false, retryable: false, status: null, error: error.message });
    return done({ ok: false, retryable: true, status: null, error: `DNS: ${messageOf(error)}` });
  }
  const client = new Client(url.origin, {
    connect: { lookup: pinned(resolved), timeout: target.timeoutMs },
    headersTimeout: target.timeoutMs,
    bodyTimeout: target.timeoutMs,
    pipelining: 0,
  });
  try {
    const response = await client.request({
      method: 'POST',
      path: `${url.pathname}${url.search}`,
      headers: {
        ...target.headers,
        ...signWebhook(payload, target.secret),
        'user-agent': USER_AGENT,
        'x-webhook-id': meta.eventId,
        'x-webhook-event': meta.eventType,
      },
      body: payload,
      signal,
    });
    await response.body.dump({ limit: BODY_LIMIT }).catch(() => undefined);
    const status = response.statusCode;
    if (status >= 200 && status < 300) return done({ ok: true, retryable: false, status, error: null });
    const retryable = status >= 500 || status === 429 || status === 408;
    return done({ ok: false, retryable, status, error: `HTTP ${status}` });
  } catch (error) {
    // undici's own timers and the signal's fire at the same moment: either one means the receiver took too long.
    const timedOut = signal.aborted || isUndiciTimeout(error);
    const message = timedOut ? `timeout: no answer within ${target.timeoutMs} ms` : describe(error);
    return done({ ok: false, retryable: true, status: null, error: message });
  } finally {
    client.destroy().catch(() => undefined);
  }
}

const UNDICI_TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function isUndiciTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && UNDICI_TIMEOUTS.has(String(error.code));
}

/** The connection goes to the address checked above, whatever DNS says by now; TLS still verifies the name. */
function pinned(target: Target): LookupFunction {
  return (_host, options, callback) => {
    if (options?.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

function describe(error: unknown): string {
  const err: { code?: unknown; message?: unknown; cause?: unknown } =
    typeof error === 'object' && error !== null ? error : {};
  const cause: { code?: unknown; message?: unknown } =
    typeof err.cause === 'object' && err.cause !== null ? err.cause : {};
  const code = err.code ?? cause.code;
  const message = String(cause.message ?? err.message ?? error);
  return (typeof code === 'string' || typeof code === 'number') && code ? `${code}: ${message}` : message;
}
