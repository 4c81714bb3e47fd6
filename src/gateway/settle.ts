/** Settlement of an answered chat request: the debit at actual usage, durable before the answer ends. */
import { usdNumber, type Settlement } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import { withSpan } from '../observability/index.js';
import { completionTokensOf, promptTokensOf, type TokenUsage } from '../pricing/index.js';
import type { RequestContext } from './deps.js';
import { outcomeEvent, type Answered } from './events.js';
import { failed } from './fail.js';
import { recordOutcome } from './record.js';

/**
 * Settles, turning a database that cannot confirm the charge into a 503 (the charge stays queued). The request's
 * llm.completion or llm.error (when wanted) is written with the debit.
 */
export async function settleOrFail(
  context: RequestContext,
  usage: TokenUsage,
  answered: Answered,
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
  signal: AbortSignal,
  used: () => TokenUsage,
  text: () => string,
): Promise<Settlement> {
  let usage: TokenUsage;
  try {
    usage = used();
  } catch (error) {
    throw failed(context, error, signal);
  }
  const billed = await settleOrFail(context, usage, { text });
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
