/**
 * A Responses request translated through chat, for every provider but OpenAI itself (and the sandbox): chat's own
 * admission, call, relay and settlement, with the request and answer translated at either end. A stream is chat's
 * relay (which settles before its last event) re-told as the Responses API's typed events.
 */
import {
  ChatStreamTranslator,
  responseFromChat,
  sseOf,
  toChatRequest,
  type ResponseMeta,
} from '../protocols/openai-responses/index.js';
import type { Route } from '../routing/index.js';
import { DONE, type StreamEvent, type UpstreamUsage } from '../wire/index.js';
import { answerChat, meteredChat } from './chat.js';
import type { GatewayDeps } from './deps.js';
import { measured } from './admit.js';
import { admitMetered } from './metered.js';
import { isErrorEnvelope } from './openai-stream.js';
import type { ChatStreamEvent } from './relay.js';
import { newResponseId, type ResponseRequestState, type ResponseResult } from './responses-request.js';

export async function answerThroughChat(
  deps: GatewayDeps,
  request: ResponseRequestState,
  route: Route,
): Promise<ResponseResult> {
  const { body, key, store } = request;
  const chat = toChatRequest(body);
  if (body.timeout_ms !== undefined) chat.timeout_ms = body.timeout_ms;
  // Hosted tools the translation leaves out never reach the provider: the translation is what is exposed.
  const metered = await measured(deps, request.input, key, () => meteredChat(request, chat));
  const id = newResponseId('resp');
  const admitted = await admitMetered(deps, { ...metered, exposed: chat, answerId: id }, route);
  const answer = await answerChat(admitted, chat);
  const { headers, context } = answer;
  const meta: ResponseMeta = {
    id,
    createdAt: Math.floor(Date.now() / 1000),
    model: context.model.id,
    newId: newResponseId,
  };
  // The id is kept (unless `store: false`) so that a later `previous_response_id` naming it is told why it cannot
  // be continued; a failure to keep it only costs that message.
  const remember = async (id: string) => {
    if (body.store === false) return;
    const response = { id, accountId: key.accountId, providerId: context.providerId, stateful: false, now: Date.now() };
    await store.record(response).catch(() => undefined);
  };

  if (answer.kind === 'stream') {
    const events = translated(answer.events, new ChatStreamTranslator(body, meta), remember);
    return { kind: 'stream', headers, events };
  }
  const response = responseFromChat(body, answer.body, meta);
  await remember(response.id);
  return { kind: 'json', headers, body: response };
}

/** Chat's relayed events as Responses events: settled before `[DONE]`, which becomes `response.completed`. */
async function* translated(
  relayed: AsyncGenerator<ChatStreamEvent, void, undefined>,
  translator: ChatStreamTranslator,
  remember: (id: string) => Promise<void>,
): AsyncGenerator<StreamEvent, void, undefined> {
  for (const event of translator.start()) yield sseOf(event);
  let usage: UpstreamUsage | undefined;
  for await (const { data } of relayed) {
    if (data === DONE.data) {
      const events = translator.end(usage);
      await remember(translator.id);
      for (const event of events) yield sseOf(event);
    } else if (isErrorEnvelope(data)) {
      for (const event of translator.fail(data.error)) yield sseOf(event);
    } else if (data.usage && data.choices.length === 0) {
      // The relay's last chunk carries the billed usage (with its cost) and no choices.
      usage = data.usage;
    } else {
      for (const event of translator.chunk(data)) yield sseOf(event);
    }
  }
}
