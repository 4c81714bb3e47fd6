/** Settlement of an answered chat request: the debit at actual usage, durable before the answer ends. */
import { usdNumber, type RequestDetail, type Settlement } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import { withSpan } from '../observability/index.js';
import { completionTokensOf, promptTokensOf, type TokenUsage } from '../pricing/index.js';
import type { RequestContext } from './deps.js';
import { outcomeEvent, type Answered } from './events.js';
import { failed } from './fail.js';
import { recordOutcome } from './record.js';

/** How an answer ended, as its ledger row keeps it: the answer's id, why it stopped, when its first token left. */
export interface AnswerEnd {
  answerId?: string | undefined;
  finishReason?: string | null | undefined;
  /** `performance.now()` when the first token was delivered; 0 when none was (or the answer came whole). */
  firstTokenAt?: number;
}

/** The request's detail at its settlement (now): the endpoint's answer id first, else the upstream's. */
export function requestDetail(context: RequestContext, end: AnswerEnd, failed: boolean): RequestDetail {
  const now = performance.now();
  return {
    endpoint: context.endpoint,
    answerId: context.answerId ?? end.answerId,
    provider: context.providerId,
    latencyMs: Math.round(now - context.started),
    firstTokenMs: end.firstTokenAt ? Math.round(end.firstTokenAt - context.started) : null,
    finishReason: failed ? 'error' : (end.finishReason ?? null),
    streamed: context.stream,
    cancelled: context.signal.aborted,
  };
}

/**
 * Settles, turning a database that cannot confirm the charge into a 503 (the charge stays queued). The request's
 * llm.completion or llm.error (when wanted) is written with the debit.
 */
export async function settleOrFail(
  context: RequestContext,
  usage: TokenUsage,
  answered: Answered,
  end: AnswerEnd = {},
): Promise<Settlement> {
  try {
    // At the prices of the model that answered (a request's fallback model may cost less than the reservation's),
    // in force when the request was admitted.
    const event = outcomeEvent(context, answered);
    const settlement = {
      requestId: context.requestId,
      model: context.model.id,
      sheet: context.model.pricing.at(context.reservation.admittedAt),
      usage: {
        ...usage,
        serviceTier: usage.serviceTier ?? context.serviceTier,
        images: Math.max(usage.images, context.images ?? 0),
      },
      ...(event ? { event } : {}),
      detail: requestDetail(context, end, answered.error !== undefined),
    };
    return await withSpan(
      'settle',
      { 'gen_ai.usage.input_tokens': promptTokensOf(usage), 'gen_ai.usage.output_tokens': completionTokensOf(usage) },
      () => context.reservation.settle(settlement),
    );
  } catch (error) {
    throw new GatewayError('service_unavailable', {
      message: 'The usage of this request could not be recorded; try again shortly',
      cause: error,
    });
  }
}

/**
 * Steps 6-7 of an answer that came whole: settles at the usage `used` gives (the upstream's, else tollgate's count), durable before the answer leaves, then records the request off the path. A count that throws (an answer
 * that cannot be measured) fails the request and releases its hold: a 502, not a hold left open.
 */
export async function settleAnswer(
  context: RequestContext,
  used: () => TokenUsage,
  text: () => string,
  end: AnswerEnd = {},
): Promise<Settlement> {
  let usage: TokenUsage;
  try {
    usage = used();
  } catch (error) {
    throw failed(context, error, context.signal);
  }
  const billed = await settleOrFail(context, usage, { text }, end);
  const { promptTokens, completionTokens, chargedNano } = billed;
  recordOutcome(context, { ok: true, promptTokens, completionTokens, chargedNano, generationMs: 0 });
  return billed;
}

/** OpenAI's `usage` as billed: the upstream's other fields kept, the counts as charged, and the cost in USD. */
export function billedUsage<U extends object>(upstream: U | null | undefined, billed: Settlement) {
  const { promptTokens, completionTokens, chargedNano } = billed;
  return {
    ...upstream,
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    cost: usdNumber(chargedNano),
  };
}
