/**
 * Metrics, live model figures and the access-log line of one finished request. They are
 * recorded just after the answer's last bytes are handed to the socket (the next check phase of the event loop),
 * not before: the client is not kept waiting for the log line's serialisation and the metrics.
 */
import { usdNumber } from '../billing/index.js';
import { messageOf } from '../errors/index.js';
import type { RequestContext } from './deps.js';

export interface Outcome {
  ok: boolean;
  status?: number | undefined;
  promptTokens: number;
  completionTokens: number;
  chargedNano: bigint;
  generationMs: number;
  /** What the client was told, when it failed. */
  error?: { code: string; message: string } | undefined;
}

export function recordOutcome(context: RequestContext, outcome: Outcome): void {
  const durationMs = performance.now() - context.started;
  setImmediate(recordSafely, context, outcome, durationMs);
}

/** Off the request's path, a failure here has no request left to fail: it is logged, never an uncaught exception. */
function recordSafely(context: RequestContext, outcome: Outcome, durationMs: number): void {
  try {
    writeRecord(context, outcome, durationMs);
  } catch (error) {
    try {
      context.log({ status: outcome.ok ? 200 : outcome.status, record_error: messageOf(error) });
    } catch {
      // the log itself failed: nothing is left to report to
    }
  }
}

function writeRecord(context: RequestContext, outcome: Outcome, durationMs: number): void {
  const { deps, model } = context;
  deps.metrics.recordChat(
    context.providerId,
    model.id,
    outcome.ok,
    durationMs / 1000,
    outcome.ok
      ? { prompt: outcome.promptTokens, completion: outcome.completionTokens, usd: usdNumber(outcome.chargedNano) }
      : undefined,
  );
  const upstreamFault =
    !outcome.ok && (outcome.status === undefined || outcome.status >= 500) && outcome.error?.code !== 'internal_error';
  // Live figures describe the model's real provider; sandbox answers to test keys say nothing about it.
  const sandboxed = context.reservation.key.environment === 'test';
  if (!sandboxed && (outcome.ok || upstreamFault)) {
    deps.performance.record(model.id, {
      ok: outcome.ok,
      durationMs,
      completionTokens: outcome.completionTokens,
      generationMs: outcome.generationMs || durationMs,
    });
  }
  context.log({
    account_id: context.reservation.account.id,
    key_id: context.reservation.key.id,
    model: model.id,
    provider: context.providerId,
    status: outcome.ok ? 200 : outcome.status,
    prompt_tokens: outcome.promptTokens,
    completion_tokens: outcome.completionTokens,
    cost: usdNumber(outcome.chargedNano),
    duration_ms: Math.round(durationMs * 100) / 100,
  });
}
