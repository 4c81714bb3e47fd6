/** The llm.* events of one request, built only when the account's webhooks want them. */
import { usdNumber, type Settlement } from '../billing/index.js';
import { llmEvent, type GatewayEvent, type LlmError, type LlmTokens } from '../events/index.js';
import type { RequestContext } from './deps.js';

/** What a settled request answered, for its event: the text (built only if wanted), or the error the client got. */
export interface Answered {
  text?: () => string;
  error?: LlmError;
}

/** The fields every llm.* event of this request shares. */
export function requestData(context: RequestContext) {
  return {
    requestId: context.requestId,
    userId: context.userId ?? context.reservation.account.id,
    model: context.model.id,
    prompt: context.promptText(),
  };
}

/** The builder of a settled request's llm.completion or llm.error (written with the debit), if wanted. */
export function outcomeEvent(
  context: RequestContext,
  answered: Answered,
): ((billed: Settlement) => GatewayEvent) | undefined {
  const type = answered.error ? 'llm.error' : 'llm.completion';
  if (!context.deps.events?.wants(type, context.reservation.account.id)) return undefined;
  return (billed) => {
    const tokens = {
      prompt: billed.promptTokens,
      completion: billed.completionTokens,
      total: billed.promptTokens + billed.completionTokens,
    };
    return llmRequestEvent(context, { tokens, cost: billed.chargedNano, text: answered.text, error: answered.error });
  };
}

/** llm.error of a request refused after admission with nothing to settle (the upstream failed before any output). */
export function emitUnsettledError(context: RequestContext, error: LlmError): void {
  const { events } = context.deps;
  if (!events?.wants('llm.error', context.reservation.account.id)) return;
  events.emit(llmRequestEvent(context, { tokens: { prompt: 0, completion: 0, total: 0 }, cost: 0n, error }));
}

function llmRequestEvent(
  context: RequestContext,
  outcome: { tokens: LlmTokens; cost: bigint; text?: (() => string) | undefined; error?: LlmError | undefined },
): GatewayEvent {
  const { account, key } = context.reservation;
  const metadata = {
    provider: context.providerId,
    keyId: key.id,
    environment: key.environment,
    stream: context.stream,
    cost: usdNumber(outcome.cost),
    durationMs: Math.round(performance.now() - context.started),
  };
  const data = { ...requestData(context), tokens: outcome.tokens, metadata };
  if (!outcome.error)
    return llmEvent('llm.completion', account.id, key.id, { ...data, completion: outcome.text?.() ?? '' });
  return llmEvent('llm.error', account.id, key.id, { ...data, error: outcome.error });
}
