/**
 * The request path of POST /v1/messages (Anthropic's Messages API) and POST /v1/messages/count_tokens, in chat's
 * steps: authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record.
 * The request is translated to chat for admission and for every provider that speaks chat; a route whose every
 * deployment speaks Messages natively (Anthropic) gets the client's body as it is (`messages-native.ts`).
 */
import { usdString } from '../billing/index.js';
import { ERROR_CATALOGUE, type ErrorEnvelope } from '../errors/index.js';
import {
  CountTokensRequestSchema,
  MessagesRequestSchema,
  MessagesStreamWriter,
  anthropicErrorBody,
  messageFromCompletion,
  sseEvent,
  toChatRequest,
  type MessagesRequest,
} from '../protocols/anthropic-messages/index.js';
import type { ChatCompletionChunk, MessagesJson } from '../providers/index.js';
import type { Route } from '../routing/index.js';
import { measurePrompt, type PromptSize } from '../tokens/index.js';
import { accountOf, admitRate, authenticate } from './admit.js';
import { authorizedModel } from './authorize.js';
import { admitChat, settleCompletionCharged, type Authenticated } from './chat.js';
import type { GatewayDeps } from './deps.js';
import { failed, type RequestInput } from './fail.js';
import type { Answer, StreamProtocol } from './idempotency.js';
import { answerNatively } from './messages-native.js';
import { relayStream } from './relay.js';
import { compiledValidator } from './schema.js';

const STATUS_OF = new Map(Object.entries(ERROR_CATALOGUE).map(([code, { status }]) => [code, status]));

const validateMessages = compiledValidator(MessagesRequestSchema);
const validateCountTokens = compiledValidator(CountTokensRequestSchema);

/** A Messages stream is complete with message_stop. */
const MESSAGES_PROTOCOL: StreamProtocol = {
  endpoint: 'messages',
  isLast: (event) => event.startsWith('event: message_stop\n'),
};

/** Anthropic's SDKs send the key in `x-api-key`; tollgate's own clients in `Authorization`. */
export function authorizationOf(authorization: string | undefined, apiKey: string | undefined): string | undefined {
  return authorization ?? (apiKey ? `Bearer ${apiKey}` : undefined);
}

export async function createMessage(input: RequestInput, deps: GatewayDeps): Promise<Answer<MessagesJson>> {
  const started = performance.now();

  // 1. Authenticate: the key and its permission, then the body and the model the key may use.
  const key = await authenticate(deps, input.authorization, 'chat');
  const body = validateMessages(input.body);
  const model = authorizedModel(deps, key, body.model);
  const request: Authenticated = { input, key, body: toChatRequest(body), model, fallbacks: undefined, started };

  // 2. Idempotency: a retry gets the first answer back (a stream's events up to message_stop), without charging.
  return deps.idempotency.run<MessagesJson>(
    key,
    input.idempotencyKey,
    input.body,
    input.requestId,
    () => answer(request, body, deps),
    MESSAGES_PROTOCOL,
  );
}

async function answer(
  request: Authenticated,
  native: MessagesRequest,
  deps: GatewayDeps,
): Promise<Answer<MessagesJson>> {
  // 3-4. Route and admit as chat does, measuring what may go upstream: the translation, or the native body.
  const { headers, route, call, contextOf } = await admitChat(request, deps, promptOf(request, native));
  const { input } = request;
  if (speaksMessages(route)) {
    const body = nativeBody(native, call.body.max_tokens ?? native.max_tokens);
    const { signal, forwardHeaders } = input;
    return answerNatively({ deps, route, call, contextOf, headers, body, signal, forwardHeaders });
  }

  // 5. Translated through chat: retries and fallbacks inside the router; a failure releases the hold.
  const id = `msg_${input.requestId}`;
  if (native.stream) {
    const routed = await deps.router.stream(route, call);
    const context = contextOf(routed);
    if (!routed.ok) throw failed(context, routed.error, input.signal);
    headers['x-tollgate-provider'] = routed.providerId;
    const writer = new MessagesStreamWriter(id, context.model.id, context.promptTokens);
    return {
      kind: 'stream',
      headers,
      events: asMessagesEvents(relayStream(context, routed.result, input.signal), writer),
    };
  }
  const routed = await deps.router.complete(route, call);
  const context = contextOf(routed);
  if (!routed.ok) throw failed(context, routed.error, input.signal);
  headers['x-tollgate-provider'] = routed.providerId;

  // 6-7. Settled as chat settles; the cost goes in a header (the Message has no field for it).
  const { completion, chargedNano } = await settleCompletionCharged(context, routed.result, input.signal);
  headers['x-tollgate-cost'] = usdString(chargedNano);
  return { kind: 'json', headers, body: { ...messageFromCompletion(id, completion) } };
}

/** POST /v1/messages/count_tokens: the prompt's tokens by tollgate's count; no charge, one request of the rate limit. */
export async function countMessageTokens(
  input: RequestInput,
  deps: GatewayDeps,
): Promise<{ headers: Record<string, string>; body: { input_tokens: number } }> {
  const key = await authenticate(deps, input.authorization, 'chat');
  const body = validateCountTokens(input.body);
  authorizedModel(deps, key, body.model);
  const account = await accountOf(deps, key);
  const headers = await admitRate(deps, account, 0);
  return { headers, body: { input_tokens: measurePrompt(toChatRequest(body)).tokens } };
}

/** Every deployment of the route serves Messages natively (a mixed route is translated for all, alike). */
function speaksMessages(route: Route): boolean {
  return route.candidates.every(
    (d) => d.provider.createMessage !== undefined && d.provider.streamMessage !== undefined,
  );
}

/** Anthropic's smallest thinking budget. */
const MIN_THINKING_BUDGET = 1_024;

/**
 * The native body with the completion bound admission allowed. Anthropic wants `max_tokens` above the thinking
 * budget: a bound lowered below it lowers the budget too, or turns thinking off when too little is left for it.
 */
function nativeBody(native: MessagesRequest, maxTokens: number): MessagesJson {
  const body: MessagesJson = { ...native, max_tokens: maxTokens };
  const budget = native.thinking?.budget_tokens;
  if (maxTokens >= native.max_tokens || budget === undefined || budget < maxTokens) return body;
  if (maxTokens > MIN_THINKING_BUDGET) body.thinking = { ...native.thinking, budget_tokens: maxTokens - 1 };
  else delete body.thinking;
  return body;
}

/** The translation's measure; its ceiling also covers the native body (thinking blocks, cache_control, ...). */
function promptOf(request: Authenticated, native: MessagesRequest): PromptSize {
  const prompt = measurePrompt(request.body);
  const nativeBytes = Buffer.byteLength(JSON.stringify(native)) + 1_024;
  return { tokens: prompt.tokens, ceiling: Math.max(prompt.ceiling, nativeBytes) };
}

/** A chat relay's SSE events (settled before its last) as Messages events; its error event as Anthropic's. */
async function* asMessagesEvents(
  events: AsyncGenerator<string, void, undefined>,
  writer: MessagesStreamWriter,
): AsyncGenerator<string, void, undefined> {
  for await (const event of events) {
    const data = event.slice('data: '.length, -2);
    if (data === '[DONE]') {
      yield* writer.end();
      continue;
    }
    const chunk: unknown = JSON.parse(data);
    if (isErrorEnvelope(chunk)) {
      const status = STATUS_OF.get(chunk.error.code) ?? 502;
      yield sseEvent('error', { error: anthropicErrorBody(status, chunk.error.message).error });
      return;
    }
    if (isChunk(chunk)) yield* writer.write(chunk);
  }
}

function isErrorEnvelope(value: unknown): value is ErrorEnvelope {
  return typeof value === 'object' && value !== null && 'error' in value && !('choices' in value);
}

/** The relay writes only chunks and error envelopes. */
function isChunk(value: unknown): value is ChatCompletionChunk {
  return typeof value === 'object' && value !== null && 'choices' in value && Array.isArray(value.choices);
}
