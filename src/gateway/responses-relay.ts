/**
 * Relays OpenAI's own Responses stream event by event, as it sent them (named with the catalog's model). It
 * meters what it delivers, settles before the event that ends the stream (`response.completed` and the like carry
 * the usage, to which the cost is added), and when the client goes away it settles for what was delivered.
 */
import { usdNumber } from '../billing/index.js';
import type { GatewayError } from '../errors/index.js';
import {
  billedResponse,
  deliveredText,
  nativeUsage,
  responseId,
  sseOf,
  withModel,
} from '../protocols/openai-responses/index.js';
import {
  MAX_ANSWER_BYTES,
  RESPONSE_END_EVENTS,
  tooLarge,
  type ResponsesCall,
  type ResponsesJson,
} from '../providers/index.js';
import { fromUpstream, type Deployment } from '../routing/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { ChatContext } from './deps.js';
import { finish } from './record.js';
import { settleOrFail, upstreamCount } from './settle.js';

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
  context: ChatContext,
  { first, events }: ResponseStreamStart,
  signal: AbortSignal,
  keep: (id: string | undefined) => Promise<unknown>,
): AsyncGenerator<string, void, undefined> {
  const delivered: string[] = [];
  let deliveredChars = 0;
  let sequence = 0;
  let firstTokenAt = 0;
  let settled = false;

  const settle = async (promptTokens: number, completionTokens: number, failed?: { code: string; message: string }) => {
    settled = true;
    const answered = failed ? { error: failed } : { text: () => delivered.join('') };
    const settlement = await settleOrFail(context, promptTokens, completionTokens, answered);
    const generationMs = firstTokenAt ? performance.now() - firstTokenAt : 0;
    const { chargedNano } = settlement;
    const billed = {
      promptTokens: settlement.promptTokens,
      completionTokens: settlement.completionTokens,
      chargedNano,
    };
    finish(context, { ok: !failed, ...(failed ? { error: failed } : {}), ...billed, generationMs });
    return settlement;
  };
  const deliveredTokens = () => countTextTokens(delivered.join(''));
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
        const text = deliveredText(event);
        if (text) {
          delivered.push(text);
          deliveredChars += text.length;
          // An endless answer would grow `delivered` without bound: past MAX_ANSWER_BYTES of text it is cut here.
          if (deliveredChars > MAX_ANSWER_BYTES) throw tooLarge(context.providerId);
          if (!firstTokenAt) firstTokenAt = performance.now();
        }
        yield sseOf(withModel(event, context.model.id));
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte a failure is OpenAI's `error` event, and the stream ends.
      const failure = fromUpstream(error);
      await settle(context.promptTokens, deliveredTokens(), failure);
      yield errorEvent(failure);
      return;
    }
    if (signal.aborted || !end) return;

    const response = typeof end.response === 'object' && end.response !== null ? end.response : {};
    let billedEnd: ResponsesJson;
    try {
      const usage = nativeUsage(response);
      const promptTokens = upstreamCount(usage?.input) ?? context.promptTokens;
      const completionTokens = upstreamCount(usage?.output) ?? deliveredTokens();
      const failed = end.type === 'response.failed' ? failureOf(response) : undefined;
      const settlement = await settle(promptTokens, completionTokens, failed);
      const cost = usdNumber(settlement.chargedNano);
      const billed = { promptTokens: settlement.promptTokens, completionTokens: settlement.completionTokens, cost };
      billedEnd = { ...end, response: billedResponse({ ...response }, context.model.id, billed) };
    } catch (error) {
      yield errorEvent(fromUpstream(error));
      return;
    }
    if (end.type !== 'response.failed') await keep(responseId(end));
    yield sseOf(billedEnd);
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!settled) await settle(context.promptTokens, deliveredTokens()).catch(() => undefined);
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
