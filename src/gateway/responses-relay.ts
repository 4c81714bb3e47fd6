/**
 * Relays OpenAI's own Responses stream event by event, as it sent them (named with the catalog's model). It
 * meters what it delivers, settles before the event that ends the stream (`response.completed` and the like carry
 * the usage, to which the cost is added), and when the client goes away it settles for what was delivered.
 */
import { usdNumber } from '../billing/index.js';
import type { GatewayError } from '../errors/index.js';
import { billedResponse, deliveredText, responseId, sseOf, withModel } from '../protocols/openai-responses/index.js';
import { RESPONSE_END_EVENTS, type ResponsesCall, type ResponsesJson } from '../providers/index.js';
import { fromUpstream, type Deployment } from '../routing/index.js';
import { isObject, type StreamEvent } from '../wire/index.js';
import type { RequestContext } from './deps.js';
import { countedUsage, responsesUsage } from '../pricing/index.js';
import { UpstreamError } from '../providers/index.js';
import { StreamMeter } from './stream-meter.js';

export interface ResponseStreamStart {
  first: IteratorResult<ResponsesJson>;
  events: AsyncIterator<ResponsesJson>;
}

/** Opens a deployment's Responses stream up to its first event: a failure before it is still retried. */
export async function openResponseStream(deployment: Deployment, call: ResponsesCall): Promise<ResponseStreamStart> {
  const events = deployment.provider.streamResponse?.(call)[Symbol.asyncIterator]();
  if (!events) throw new Error(`'${deployment.providerId}' does not serve the Responses API natively`);
  return { first: await events.next(), events };
}

export async function* relayResponseStream(
  context: RequestContext,
  { first, events }: ResponseStreamStart,
  signal: AbortSignal,
  keep: (id: string | undefined, contextTokens: number) => Promise<unknown>,
): AsyncGenerator<StreamEvent, void, undefined> {
  let sequence = 0;
  // Cut short, the stream is charged the whole prompt the provider took in (as held: fetched files and search
  // results, or a continued conversation of unknown size, at the whole context) and what was delivered.
  const delivered = () => countedUsage(context.promptCeiling, meter.tokens());
  const meter = new StreamMeter(context, (!first.done && responseId(first.value)) || `resp_${context.requestId}`);
  const errorEvent = (failure: GatewayError) =>
    sseOf({
      type: 'error',
      sequence_number: ++sequence,
      code: failure.code,
      message: failure.message,
      param: failure.param,
    });

  try {
    let end: ResponsesJson | undefined;
    try {
      for (let next = first; !next.done; next = await events.next()) {
        const event = next.value;
        if (typeof event.sequence_number === 'number') sequence = event.sequence_number;
        if (typeof event.type === 'string' && RESPONSE_END_EVENTS.has(event.type)) {
          end = event;
          break;
        }
        meter.deliver(deliveredText(event));
        yield sseOf(withModel(event, context.model.id));
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte a failure is OpenAI's `error` event, and the stream ends.
      const failure = fromUpstream(error);
      await meter.settle(delivered(), failure);
      yield errorEvent(failure);
      return;
    }
    if (signal.aborted) return;
    if (!end) {
      const failure = new UpstreamError(context.providerId, 'protocol', 'The stream ended before its final event');
      const error = fromUpstream(failure);
      await meter.settle(delivered(), error);
      yield errorEvent(error);
      return;
    }

    const response = typeof end.response === 'object' && end.response !== null ? end.response : {};
    let billedEnd: ResponsesJson;
    let carried = 0;
    try {
      const failed = end.type === 'response.failed' ? failureOf(response) : undefined;
      const own = { prompt: context.promptTokens, completion: () => meter.tokens() };
      meter.finishReason = responseEnd(response);
      const settlement = await meter.settle(responsesUsage(response, own), failed);
      carried = settlement.promptTokens + settlement.completionTokens;
      const cost = usdNumber(settlement.chargedNano);
      const billed = { promptTokens: settlement.promptTokens, completionTokens: settlement.completionTokens, cost };
      billedEnd = { ...end, response: billedResponse({ ...response }, context.model.id, billed) };
    } catch (error) {
      yield errorEvent(fromUpstream(error));
      return;
    }
    if (end.type !== 'response.failed') {
      await keep(responseId(end), carried);
      meter.end();
    }
    yield sseOf(billedEnd);
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!meter.settled) await meter.settle(delivered()).catch(() => undefined);
    void events.return?.().catch(() => undefined);
  }
}

/** The error a failed Response reports (for its llm.error event). */
function failureOf(response: object): { code: string; message: string } {
  const error: unknown = Reflect.get(response, 'error');
  const field = (name: string): unknown =>
    typeof error === 'object' && error !== null ? Reflect.get(error, name) : undefined;
  const code = field('code');
  const message = field('message');
  return {
    code: typeof code === 'string' ? code : 'upstream_error',
    message: typeof message === 'string' ? message : 'The response failed',
  };
}

/** How a Response ended, for its ledger row: `completed`, `failed`, or why it is incomplete (`max_output_tokens`). */
export function responseEnd(response: object): string | null {
  const { status, incomplete_details: incomplete } = response as { status?: unknown; incomplete_details?: unknown };
  if (status === 'incomplete' && isObject(incomplete) && typeof incomplete.reason === 'string')
    return incomplete.reason;
  return typeof status === 'string' ? status : null;
}
