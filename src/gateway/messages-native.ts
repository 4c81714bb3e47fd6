/**
 * POST /v1/messages to a provider that speaks Messages natively (Anthropic): the client's body goes upstream
 * as it is, and the answer or its events come back unchanged but for `model` (the catalog's id) and the cost.
 * Metered from Anthropic's usage: input, cache-write and cache-read tokens are all prompt tokens at the prompt
 * price (the Anthropic adapter's policy for chat too), output tokens the completion.
 */
import { usdNumber, usdString } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import type { MessagesEvent, MessagesJson, Provider } from '../providers/index.js';
import type { AttemptCall, Deployment, Way } from '../routing/index.js';
import { countTextTokens } from '../tokens/index.js';
import { isObject } from '../wire/index.js';
import { contentText, relayNative, type NativeStart } from './messages-relay.js';
import { meteredCall, type Admitted } from './metered.js';
import type { Answer } from './request.js';
import { settleAnswer } from './settle.js';
import { anthropicUsage } from '../pricing/index.js';

/**
 * An admitted Messages request, answered by the route's deployments natively: `body` is the client's (with the
 * completion bound admission allowed), sent with the client's `anthropic-beta` (its beta features and their fields).
 */
export async function answerNatively(admitted: Admitted, body: MessagesJson): Promise<Answer<MessagesJson>> {
  const { signal, forwardHeaders } = admitted.request.input;
  const messagesCall = (deployment: Deployment, attempt: AttemptCall) => ({
    ...attempt,
    body: { ...body, model: deployment.upstreamModel },
    headers: forwardHeaders,
  });

  if (body.stream === true) {
    const way: Way<NativeStart> = {
      streaming: true,
      attempt: (deployment, attempt) =>
        openNative(messenger(deployment).streamMessage(messagesCall(deployment, attempt))),
    };
    const { context, result, headers } = await meteredCall(admitted, way);
    return { kind: 'stream', headers, events: relayNative(context, result, signal) };
  }
  const way: Way<MessagesJson> = {
    streaming: false,
    attempt: (deployment, attempt) => messenger(deployment).createMessage(messagesCall(deployment, attempt)),
  };
  const { context, result: message, headers } = await meteredCall(admitted, way);
  const counted = () => countTextTokens(contentText(message.content));
  const used = () => anthropicUsage(message.usage, { prompt: context.promptTokens, completion: counted });
  const answerId = typeof message.id === 'string' ? message.id : undefined;
  const end = { answerId, finishReason: typeof message.stop_reason === 'string' ? message.stop_reason : null };
  const billed = await settleAnswer(context, used, () => contentText(message.content), end);
  headers['x-tollgate-cost'] = usdString(billed.chargedNano);
  const usage = { ...(isObject(message.usage) ? message.usage : {}), cost: usdNumber(billed.chargedNano) };
  return { kind: 'json', headers, body: { ...message, model: context.model.id, usage } };
}

type Messenger = Provider & Required<Pick<Provider, 'createMessage' | 'streamMessage'>>;

/** The deployment's provider, which the route's check found to speak Messages. */
function messenger({ provider }: Deployment): Messenger {
  if (!speaksMessages(provider)) throw new GatewayError('internal_error');
  return provider;
}

export function speaksMessages(provider: Provider): provider is Messenger {
  return provider.createMessage !== undefined && provider.streamMessage !== undefined;
}

/** How long a stream's opening events may be held back waiting for its first event with substance (as for chat). */
const PREAMBLE_HOLD_MS = 2_000;

/**
 * Reads a stream up to its first event with substance, for at most PREAMBLE_HOLD_MS: a failure before then
 * (Anthropic's overloaded_error right after message_start) is still retried, since nothing has reached the client.
 */
async function openNative(events: AsyncIterable<MessagesEvent>): Promise<NativeStart> {
  const rest = events[Symbol.asyncIterator]();
  const held: MessagesEvent[] = [];
  const until = Date.now() + PREAMBLE_HOLD_MS;
  for (;;) {
    const read = rest.next();
    const next = held.length === 0 ? await read : await beforeDeadline(read, until);
    if (next === 'late') {
      read.catch(() => undefined); // awaited by the relay, or dropped when the client goes away
      return { held, pending: read, rest };
    }
    if (next.done) break;
    held.push(next.value);
    if (!isPreamble(next.value)) break;
  }
  return { held, rest };
}

async function beforeDeadline<T>(read: Promise<T>, until: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, Math.max(0, until - Date.now()), 'late')));
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An event that carries nothing of the answer yet: message_start, ping, the start of an empty text or thinking block. */
function isPreamble({ event, data }: MessagesEvent): boolean {
  if (event === 'message_start' || event === 'ping') return true;
  if (event !== 'content_block_start' || !isObject(data.content_block)) return false;
  const block = data.content_block;
  return (block.type === 'text' && !block.text) || (block.type === 'thinking' && !block.thinking);
}
