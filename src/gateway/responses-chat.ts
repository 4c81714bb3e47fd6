/**
 * A Responses request translated through chat, for every provider but OpenAI itself (and the sandbox): chat's own
 * admission, call, relay and settlement, with the request and answer translated at either end. A stream is chat's
 * relay (which settles before its last event) read back and re-told as the Responses API's typed events.
 */
import {
  ChatStreamTranslator,
  responseFromChat,
  sseOf,
  toChatRequest,
  type ResponseMeta,
} from '../protocols/openai-responses/index.js';
import type { ChatCompletionChunk, Usage } from '../providers/index.js';
import { admitChat, settleCompletion } from './chat.js';
import type { GatewayDeps } from './deps.js';
import { failed } from './fail.js';
import { relayStream } from './relay.js';
import { newResponseId, type ResponseRequestState, type ResponseResult } from './responses-request.js';

export async function answerThroughChat(request: ResponseRequestState, deps: GatewayDeps): Promise<ResponseResult> {
  const { input, key, body, model, fallbacks, started, store } = request;
  const chat = toChatRequest(body);
  if (body.timeout_ms !== undefined) chat.timeout_ms = body.timeout_ms;
  const { headers, route, call, contextOf } = await admitChat(
    { input, key, body: chat, model, fallbacks, started },
    deps,
  );
  const meta = (modelId: string): ResponseMeta => ({
    id: newResponseId('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    model: modelId,
    newId: newResponseId,
  });
  // The id is kept (unless `store: false`) so that a later `previous_response_id` naming it is told why it cannot
  // be continued; a failure to keep it only costs that message.
  const remember = async (id: string, providerId: string) => {
    if (body.store === false) return;
    const response = { id, accountId: key.accountId, providerId, stateful: false, now: Date.now() };
    await store.record(response).catch(() => undefined);
  };

  if (chat.stream) {
    const routed = await deps.router.stream(route, call);
    const context = contextOf(routed);
    if (!routed.ok) throw failed(context, routed.error, input.signal);
    headers['x-tollgate-provider'] = routed.providerId;
    const translator = new ChatStreamTranslator(body, meta(routed.model.id));
    const relayed = relayStream(context, routed.result, input.signal);
    const events = translated(relayed, translator, (id) => remember(id, routed.providerId));
    return { kind: 'stream', headers, events };
  }
  const routed = await deps.router.complete(route, call);
  const context = contextOf(routed);
  if (!routed.ok) throw failed(context, routed.error, input.signal);
  headers['x-tollgate-provider'] = routed.providerId;
  const completion = await settleCompletion(context, routed.result, input.signal);
  const response = responseFromChat(body, completion, meta(context.model.id));
  await remember(response.id, routed.providerId);
  return { kind: 'json', headers, body: response };
}

/** Chat's relayed SSE events as Responses events: settled before `[DONE]`, which becomes `response.completed`. */
async function* translated(
  relayed: AsyncGenerator<string, void, undefined>,
  translator: ChatStreamTranslator,
  remember: (id: string) => Promise<void>,
): AsyncGenerator<string, void, undefined> {
  for (const event of translator.start()) yield sseOf(event);
  let usage: Usage | undefined;
  for await (const sse of relayed) {
    if (sse === 'data: [DONE]\n\n') {
      const events = translator.finish(usage);
      await remember(translator.id);
      for (const event of events) yield sseOf(event);
      continue;
    }
    const json: unknown = JSON.parse(sse.slice('data: '.length));
    const error = errorOf(json);
    if (error) {
      for (const event of translator.fail(error)) yield sseOf(event);
    } else if (isChunk(json)) {
      // The relay's last chunk carries the billed usage (with its cost) and no choices.
      if (json.usage && json.choices.length === 0) usage = json.usage;
      else for (const event of translator.chunk(json)) yield sseOf(event);
    }
  }
}

function isChunk(json: unknown): json is ChatCompletionChunk {
  return typeof json === 'object' && json !== null && Array.isArray(Reflect.get(json, 'choices'));
}

/** The error of the relay's error event (`{"error": {...}}`), if this is one. */
function errorOf(json: unknown): { code: string; message: string } | undefined {
  const error: unknown = typeof json === 'object' && json !== null ? Reflect.get(json, 'error') : undefined;
  if (typeof error !== 'object' || error === null) return undefined;
  const code: unknown = Reflect.get(error, 'code');
  const message: unknown = Reflect.get(error, 'message');
  return { code: typeof code === 'string' ? code : 'upstream_error', message: String(message) };
}
