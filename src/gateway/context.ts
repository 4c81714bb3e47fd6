/** What one chat request carries through the path, and the steps shared by the JSON and streaming ends. */
import type { Authenticator } from '../auth/index.js';
import { usdNumber, type PlanLimits, type Reservation, type Wallet } from '../billing/index.js';
import type { Catalog, CatalogModel, PerformanceTracker } from '../catalog/index.js';
import { GatewayError } from '../errors/index.js';
import type { RateLimiter } from '../limits/index.js';
import type { Metrics } from '../observability/index.js';
import type { ChatCompletion } from '../providers/types.js';
import type { Router } from '../routing/index.js';
import type { AccountSettings } from '../storage/index.js';
import { countTextTokens } from '../tokens/index.js';

export interface GatewayDeps {
  auth: Authenticator;
  catalog: Catalog;
  router: Router;
  limiter: RateLimiter;
  wallet: Wallet;
  performance: PerformanceTracker;
  metrics: Metrics;
  limitsFor(account: { plan: string; settings: AccountSettings }): PlanLimits;
  upstreamTimeoutMs: number;
}

export interface ChatContext {
  requestId: string;
  model: CatalogModel;
  providerId: string;
  promptTokens: number;
  reservation: Reservation;
  started: number;
  deps: GatewayDeps;
  log(fields: Record<string, unknown>): void;
}

/** Completion tokens of an answer whose upstream reported no usage. */
export function completionTokensOf(completion: ChatCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (typeof choice.message.content === 'string') tokens += countTextTokens(choice.message.content);
    for (const call of choice.message.tool_calls ?? []) tokens += countTextTokens(call.function.name + call.function.arguments);
  }
  return tokens;
}

/** Settles, turning a database that cannot confirm the charge into a 503 (the charge stays queued). */
export async function settleOrFail(context: ChatContext, promptTokens: number, completionTokens: number) {
  try {
    return await context.reservation.settle({ requestId: context.requestId, model: context.model.id, promptTokens, completionTokens });
  } catch (error) {
    throw new GatewayError('service_unavailable', { message: 'The usage of this request could not be recorded; try again shortly', cause: error });
  }
}

export interface Outcome {
  ok: boolean;
  status?: number;
  promptTokens: number;
  completionTokens: number;
  chargedNano: bigint;
  generationMs: number;
}

/** Metrics, live model figures and the access-log line of one finished request. */
export function finish(context: ChatContext, outcome: Outcome): void {
  const { deps, model } = context;
  const durationMs = performance.now() - context.started;
  deps.metrics.reservationsOpen.set(deps.wallet.reservationsOpen);
  deps.metrics.recordChat(
    context.providerId,
    model.id,
    outcome.ok,
    durationMs / 1000,
    outcome.ok ? { prompt: outcome.promptTokens, completion: outcome.completionTokens, usd: usdNumber(outcome.chargedNano) } : undefined,
  );
  const upstreamFault = !outcome.ok && (outcome.status === undefined || outcome.status >= 500);
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
  if (outcome.ok) {
    void deps.limiter.addTokens(context.reservation.account.id, outcome.completionTokens);
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
