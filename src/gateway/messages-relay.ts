/**
 * Relays Anthropic's Messages events as they come (`messages-native.ts` opened the stream), metering what was
 * delivered: settled at message_delta, before message_stop leaves, with the cost on message_delta's usage; an
 * error after the first byte is one `error` event; a client that goes away is charged for what it was sent.
 */
import { usdNumber } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import { anthropicErrorBody, messagesEvent } from '../protocols/anthropic-messages/index.js';
import type { MessagesEvent } from '../providers/index.js';
import { fromUpstream } from '../routing/index.js';
import { isObject, type StreamEvent } from '../wire/index.js';
import type { RequestContext } from './deps.js';
import { anthropicUsage, reportedCount } from '../pricing/index.js';
import { UpstreamError } from '../providers/index.js';
import { StreamMeter } from './stream-meter.js';

/** A native stream up to its first event with substance: the events read so far and the rest. */
export interface NativeStart {
  held: MessagesEvent[];
  /** A read still under way when the hold ran out. */
  pending?: Promise<IteratorResult<MessagesEvent>>;
  rest: AsyncIterator<MessagesEvent>;
}

/** Relays Anthropic's events as they come, metering what was delivered and settling before message_stop. */
export async function* relayNative(
  context: RequestContext,
  start: NativeStart,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent, void, undefined> {
  const { rest } = start;
  const usage: Record<string, unknown> = {};
  let stopped = false;
  // message_delta said why the message stopped and carries the final output count.
  let whole = false;
  const meter = new StreamMeter(context, messageId(start) ?? context.requestId);
  // The prompt as Anthropic counts it once message_start has said, else ours; the output as reported when whole,
  // else what was delivered.
  const settle = (outputTokens: number, failure?: GatewayError) =>
    meter.settle(
      anthropicUsage(
        { ...usage, output_tokens: outputTokens },
        { prompt: context.promptTokens, completion: () => outputTokens },
      ),
      failure,
    );

  // The answer is whole (message_delta said why it stopped): the charge is made durable before message_stop leaves.
  const settleWhole = async (): Promise<bigint | GatewayError> => {
    try {
      return (await settle(reportedCount(usage.output_tokens) ?? meter.tokens())).chargedNano;
    } catch (error) {
      return fromUpstream(error);
    }
  };

  try {
    try {
      const next = nextOf(start);
      for (let item = await next(); !item.done; item = await next()) {
        const { event, data } = item.value;
        if (event === 'message_start' && isObject(data.message)) {
          Object.assign(usage, withoutNulls(data.message.usage));
          data.message = { ...data.message, model: context.model.id };
        } else if (event === 'content_block_start' || event === 'content_block_delta') {
          meter.deliver(deliveredText(event === 'content_block_start' ? data.content_block : data.delta));
        } else if ((event === 'message_delta' || event === 'message_stop') && !meter.settled) {
          if (event === 'message_delta') {
            Object.assign(usage, withoutNulls(data.usage));
            if (isObject(data.delta) && typeof data.delta.stop_reason === 'string')
              meter.finishReason = data.delta.stop_reason;
            whole = true;
          }
          const charged = await settleWhole();
          if (charged instanceof GatewayError) return void (yield errorEvent(charged));
          if (event === 'message_delta')
            data.usage = { ...(isObject(data.usage) ? data.usage : {}), cost: usdNumber(charged) };
        }
        if (event === 'message_stop') stopped = true;
        yield item.value;
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte an error is one `error` event, and no message_stop.
      const failure = fromUpstream(error);
      await settle(meter.tokens(), failure);
      yield errorEvent(failure);
      return;
    }
    if (signal.aborted) return;
    // Closed before message_delta: message_start's output count is not the answer's; charged what was delivered.
    if (!whole && !meter.settled) {
      const failure = fromUpstream(new UpstreamError(context.providerId, 'protocol', 'The stream ended early'));
      await settle(meter.tokens(), failure);
      return void (yield errorEvent(failure));
    }
    // The upstream said why it stopped but closed before message_stop: the stream still ends as Anthropic's do.
    if (!stopped) {
      const charged = meter.settled ? 0n : await settleWhole();
      if (charged instanceof GatewayError) return void (yield errorEvent(charged));
      yield messagesEvent('message_stop', {});
    }
    meter.end();
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!meter.settled) await settle(meter.tokens()).catch(() => undefined);
    void rest.return?.().catch(() => undefined);
  }
}

/** The id message_start gave the message, when it came first. */
function messageId({ held }: NativeStart): string | undefined {
  const message = held[0]?.event === 'message_start' ? held[0].data.message : undefined;
  return isObject(message) && typeof message.id === 'string' ? message.id : undefined;
}

function errorEvent(failure: GatewayError): StreamEvent {
  return messagesEvent('error', { error: anthropicErrorBody(failure.status, failure.message).error });
}

/** The held events first, then the read under way, then the rest of the stream. */
function nextOf(start: NativeStart): () => Promise<IteratorResult<MessagesEvent>> {
  let { pending } = start;
  return () => {
    const held = start.held.shift();
    if (held) return Promise.resolve({ done: false, value: held });
    if (pending) {
      const read = pending;
      pending = undefined;
      return read;
    }
    return start.rest.next();
  };
}

/** The text a block or delta delivers: text, thinking, a tool's name or its input's JSON. */
function deliveredText(part: unknown): string {
  if (!isObject(part)) return '';
  for (const field of ['text', 'thinking', 'partial_json', 'name'])
    if (typeof part[field] === 'string') return part[field];
  return '';
}

export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((block: unknown) =>
      isObject(block)
        ? deliveredText(block) + (block.type === 'tool_use' ? JSON.stringify(block.input ?? {}) : '')
        : '',
    )
    .join('');
}

function withoutNulls(value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (isObject(value)) for (const [key, v] of Object.entries(value)) if (v != null) out[key] = v;
  return out;
}
