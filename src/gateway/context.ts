/** What one chat request carries through the path, and the steps shared by the JSON and streaming ends. */
import type { Authenticator } from '../auth/index.js';
import { usdNumber, type PlanLimits, type Reservation, type Settlement, type Wallet } from '../billing/index.js';
import type { Catalog, CatalogModel, PerformanceTracker } from '../catalog/index.js';
import { GatewayError } from '../errors/index.js';
import { llmEvent, promptText, type EventSink, type GatewayEvent, type LlmError, type LlmTokens } from '../events/index.js';
import type { RateLimiter } from '../limits/index.js';
import { withSpan, type Metrics } from '../observability/index.js';
import type { ChatCompletion, ChatRequest } from '../providers/types.js';
import type { Router } from '../routing/index.js';
import type { AccountSettings } from '../storage/index.js';
import type { Idempotency } from './idempotency.js';
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
  /** Idempotency-Key handling: first answers kept 24 h per account and key. */
  idempotency: Idempotency;
  /** Where `llm.*` events go (webhooks); nothing is built for a type the account's webhooks do not want. */
  events?: EventSink;
}

export interface ChatContext {
  requestId: string;
  model: CatalogModel;
  providerId: string;
  promptTokens: number;
  reservation: Reservation;
  started: number;
  deps: GatewayDeps;
  /** The validated request (the `prompt` and `userId` of llm.* events). */
  body?: ChatRequest;
  log(fields: Record<string, unknown>): void;
}

/**
 * A token count from an upstream's usage, if it is one: a non-negative safe integer. Anything else (a fraction, a
 * string, a negative or enormous number) is ignored and tollgate counts instead: such a value cannot be priced
 * (BigInt throws) nor stored, and a settlement that fails after the answer would leave its hold unreleased.
 */
export function upstreamCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Completion tokens of an answer whose upstream reported no usage. */
export function completionTokensOf(completion: ChatCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (typeof choice.message.content === 'string') tokens += countTextTokens(choice.message.content);
    for (const { function: fn } of choice.message.tool_calls ?? []) tokens += countTextTokens(textOf(fn.name) + textOf(fn.arguments));
  }
  return tokens;
}

/** What a settled request answered, for its event: the text (built only if wanted), or the error the client got. */
export interface Answered {
  text?: () => string;
  error?: LlmError;
}

/**
 * Settles, turning a database that cannot confirm the charge into a 503 (the charge stays queued). The request's
 * llm.completion or llm.error (when wanted) is written with the debit.
 */
export async function settleOrFail(context: ChatContext, promptTokens: number, completionTokens: number, answered: Answered) {
  try {
    // At the price of the model that answered (a request's fallback model may cost less than the reservation's).
    const event = outcomeEvent(context, answered);
    const settlement = { requestId: context.requestId, model: context.model.id, price: context.model.price, promptTokens, completionTokens, ...(event ? { event } : {}) };
    return await withSpan('settle', { 'gen_ai.usage.input_tokens': promptTokens, 'gen_ai.usage.output_tokens': completionTokens }, () => context.reservation.settle(settlement));
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
  /** What the client was told, when it failed. */
  error?: { code: string; message: string };
}

/** The text of an answer's first choice (the `completion` of llm.completion). */
export function completionText(completion: ChatCompletion): string {
  const content = completion.choices[0]?.message.content;
  return typeof content === 'string' ? content : '';
}

/** The fields every llm.* event of this request shares. */
export function requestData(context: ChatContext) {
  return {
    requestId: context.requestId,
    userId: context.body?.user ?? context.reservation.account.id,
    model: context.model.id,
    prompt: context.body ? promptText(context.body.messages) : '',
  };
}

/** The builder of a settled request's llm.completion or llm.error, if the account's webhooks want it. */
function outcomeEvent(context: ChatContext, answered: Answered): ((billed: Settlement) => GatewayEvent) | undefined {
  const type = answered.error ? 'llm.error' : 'llm.completion';
  if (!context.deps.events?.wants(type, context.reservation.account.id)) return undefined;
  return (billed) => {
    const tokens = { prompt: billed.promptTokens, completion: billed.completionTokens, total: billed.promptTokens + billed.completionTokens };
    return llmRequestEvent(context, { tokens, cost: billed.chargedNano, text: answered.text, error: answered.error });
  };
}

/** llm.error of a request refused after admission with nothing to settle (the upstream failed before any output). */
export function emitUnsettledError(context: ChatContext, error: LlmError): void {
  const { events } = context.deps;
  if (!events?.wants('llm.error', context.reservation.account.id)) return;
  events.emit(llmRequestEvent(context, { tokens: { prompt: 0, completion: 0, total: 0 }, cost: 0n, error }));
}

function llmRequestEvent(context: ChatContext, outcome: { tokens: LlmTokens; cost: bigint; text?: (() => string) | undefined; error?: LlmError | undefined }): GatewayEvent {
  const { account, key } = context.reservation;
  const metadata = {
    provider: context.providerId,
    keyId: key.id,
    environment: key.environment,
    stream: context.body?.stream === true,
    cost: usdNumber(outcome.cost),
    durationMs: Math.round(performance.now() - context.started),
  };
  const data = { ...requestData(context), tokens: outcome.tokens, metadata };
  if (!outcome.error) return llmEvent('llm.completion', account.id, key.id, { ...data, completion: outcome.text?.() ?? '' });
  return llmEvent('llm.error', account.id, key.id, { ...data, error: outcome.error });
}

/**
 * Metrics, live model figures and the access-log line of one finished request. They are recorded just after the
 * answer's last bytes are handed to the socket (the next check phase of the event loop), not before: the client is
 * not kept waiting for the log line's serialisation and the metrics.
 */
export function finish(context: ChatContext, outcome: Outcome): void {
  const durationMs = performance.now() - context.started;
  setImmediate(record, context, outcome, durationMs);
}

/** Off the request's path, a failure here has no request left to fail: it is logged, never an uncaught exception. */
function record(context: ChatContext, outcome: Outcome, durationMs: number): void {
  try {
    recordOutcome(context, outcome, durationMs);
  } catch (error) {
    try {
      context.log({ status: outcome.ok ? 200 : outcome.status, record_error: (error as Error).message });
    } catch {
      // the log itself failed: nothing is left to report to
    }
  }
}

function recordOutcome(context: ChatContext, outcome: Outcome, durationMs: number): void {
  const { deps, model } = context;
  deps.metrics.recordChat(
    context.providerId,
    model.id,
    outcome.ok,
    durationMs / 1000,
    outcome.ok ? { prompt: outcome.promptTokens, completion: outcome.completionTokens, usd: usdNumber(outcome.chargedNano) } : undefined,
  );
  const upstreamFault = !outcome.ok && (outcome.status === undefined || outcome.status >= 500) && outcome.error?.code !== 'internal_error';
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
