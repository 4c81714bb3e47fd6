/**
 * Which failures are worth another attempt, and how long to wait before it. Retryable: connection errors,
 * timeouts, broken answers, 429 and 5xx (Anthropic's 529 included). A request the upstream rejected as malformed
 * (400, 413, 422) stops everything: another provider would reject it too. 401/403/404 are this deployment's
 * configuration: no retry, but the next deployment may work. Only an UpstreamError is the provider's: any other
 * error (a GatewayError, a TypeError or RangeError of our own code building the request or reading the answer)
 * stops the request and never counts against the deployment's circuit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { redactForClient } from '../providers/redact.js';
import { UpstreamError } from '../providers/types.js';

export type Verdict = 'retry' | 'next' | 'stop';

const CLIENT_FAULTS = new Set([400, 413, 422]);

export function verdict(error: unknown): Verdict {
  if (!(error instanceof UpstreamError)) return 'stop';
  if (error.kind !== 'http' || error.status === undefined) return 'retry';
  if (error.status === 429 || error.status >= 500) return 'retry';
  return CLIENT_FAULTS.has(error.status) ? 'stop' : 'next';
}

/** Short text for breaker reasons, which clients see in a model's status: without credentials or addresses. */
export function reasonOf(error: unknown): string {
  if (error instanceof UpstreamError) {
    const what = error.kind === 'http' ? `HTTP ${error.status}` : error.kind;
    return redactForClient(`${what}: ${error.message}`).slice(0, 200);
  }
  return redactForClient(String((error as Error)?.message ?? error)).slice(0, 200);
}

/** Exponential backoff with jitter: base * 2^attempt, capped, then scaled by 50-100 %. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling * (0.5 + Math.random() * 0.5));
}

/** Waits, unless the client goes away first (then rejects with the abort reason). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return ms > 0 ? sleep(ms, undefined, { signal }) : Promise.resolve();
}
