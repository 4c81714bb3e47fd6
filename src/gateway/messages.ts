/**
 * The request path of POST /v1/messages (Anthropic's Messages API) and POST /v1/messages/count_tokens, in chat's
 * steps: authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record.
 * The request is translated to chat for admission and for every provider that speaks chat; a route whose every
 * deployment speaks Messages natively (Anthropic) gets the client's body as it is (`messages-native.ts`).
 */
import { usdNumber, usdString } from '../billing/index.js';
import { ERROR_CATALOGUE, GatewayError } from '../errors/index.js';
import {
  CountTokensRequestSchema,
  MessagesRequestSchema,
  MessagesStreamWriter,
  anthropicErrorBody,
  messageFromCompletion,
  messagesEvent,
  toChatRequest,
  type MessagesRequest,
} from '../protocols/anthropic-messages/index.js';
import type { MessagesJson } from '../providers/index.js';
import type { Route } from '../routing/index.js';
import { countTextTokens, measurePrompt, type PromptSize } from '../tokens/index.js';
import { DONE, type ChatRequest, type StreamEvent } from '../wire/index.js';
import { isObject } from '../wire/guards.js';
import { accountOf, admitRate, authenticate, measured } from './admit.js';
import { CHAT, authorizedModel } from './authorize.js';
import { answerChat, meteredChat } from './chat.js';
import type { GatewayDeps } from './deps.js';
import type { StreamProtocol } from './idempotency.js';
import { admitMetered } from './metered.js';
import { answerNatively, speaksMessages } from './messages-native.js';
import { withSearchBounds } from './exposure.js';
import { isErrorEnvelope } from './openai-stream.js';
import type { ChatStreamEvent } from './relay.js';
import type { Answer, RequestInput } from './request.js';
import { compiledValidator } from './schema.js';

const STATUS_OF = new Map(Object.entries(ERROR_CATALOGUE).map(([code, { status }]) => [code, status]));

const validateMessages = compiledValidator(MessagesRequestSchema);
const validateCountTokens = compiledValidator(CountTokensRequestSchema);

/** A Messages stream is complete with message_stop. */
const MESSAGES_PROTOCOL: StreamProtocol = {
  endpoint: 'messages',
  isLast: (event) => event.event === 'message_stop',
};

/** Anthropic's SDKs send the key in `x-api-key`; tollgate's own clients in `Authorization`. */
export function authorizationOf(authorization: string | undefined, apiKey: string | undefined): string | undefined {
  return authorization ?? (apiKey ? `Bearer ${apiKey}` : undefined);
}

export async function createMessage(input: RequestInput, deps: GatewayDeps): Promise<Answer<MessagesJson>> {
  const started = performance.now();

  // 1. Authenticate: the key and its permission, then the body and the model the key may use. Admission measures
  // what may go upstream: the translation, or the native body.
  const key = await authenticate(deps, input, 'chat');
  const native = validateMessages(input.body);
  const model = authorizedModel(deps, key, native.model, CHAT);
  refuseLongerContext(input, model.contextLength);
  const chat = toChatRequest(native);
  const request = await measured(deps, input, key, () =>
    meteredChat({ input, key, model, fallbacks: undefined, started }, chat, promptOf(chat, native)),
  );

  // 2. Idempotency: a retry gets the first answer back (a stream's events up to message_stop), without charging.
  return deps.idempotency.run<MessagesJson>(
    key,
    input,
    async () => {
      // 3-4. Route, the rate limits, the hold; natively when every deployment speaks Messages.
      const admitted = await admitMetered(deps, request);
      if (allSpeakMessages(admitted.route)) {
        const { lowered, maxTokens } = admitted.reservation.admission;
        return answerNatively(admitted, withSearchBounds(nativeBody(native, lowered ? maxTokens : native.max_tokens)));
      }
      // 5-7. Translated through chat; the cost goes in `usage.cost` and a header, as on a native answer.
      const id = `msg_${input.requestId}`;
      const answer = await answerChat({ ...admitted, request: { ...admitted.request, answerId: id } }, chat);
      const { headers, context } = answer;
      if (answer.kind === 'stream') {
        const writer = new MessagesStreamWriter(id, context.model.id, context.promptTokens);
        return { kind: 'stream', headers, events: asMessagesEvents(answer.events, writer) };
      }
      headers['x-tollgate-cost'] = usdString(answer.chargedNano);
      const message = messageFromCompletion(id, answer.body);
      return {
        kind: 'json',
        headers,
        body: { ...message, usage: { ...message.usage, cost: usdNumber(answer.chargedNano) } },
      };
    },
    MESSAGES_PROTOCOL,
  );
}

/** POST /v1/messages/count_tokens: the prompt's tokens by tollgate's count; no charge, one request of the rate limit. */
export async function countMessageTokens(
  input: RequestInput,
  deps: GatewayDeps,
): Promise<{ headers: Record<string, string>; body: { input_tokens: number } }> {
  const key = await authenticate(deps, input, 'chat');
  const body = validateCountTokens(input.body);
  authorizedModel(deps, key, body.model, CHAT);
  const account = await accountOf(deps, key);
  const headers = await admitRate(deps, account, key, 0);
  const tokens = await measured(deps, input, key, () => measurePrompt(toChatRequest(body)).tokens);
  return { headers, body: { input_tokens: tokens } };
}

/** Every deployment of the route serves Messages natively (a mixed route is translated for all, alike). */
function allSpeakMessages(route: Route): boolean {
  return route.candidates.every((d) => speaksMessages(d.provider));
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

/**
 * Anthropic's 1M-context beta takes a prompt past the model's catalog context length, where neither the hold nor
 * the report's bound covers it and long-context prices apply: refused unless the catalog's model has that context.
 */
function refuseLongerContext(input: RequestInput, contextLength: number): void {
  const betas = input.forwardHeaders?.['anthropic-beta'] ?? '';
  if (contextLength < 1_000_000 && /(^|,)\s*context-1m/.test(betas))
    throw new GatewayError('invalid_request', {
      message: `The 1M-context beta is not available for this model here: its catalog context length is ${contextLength} tokens. Send the request without 'context-1m' in anthropic-beta`,
      param: 'anthropic-beta',
    });
}

/**
 * The translation's measure, plus the blocks it has no chat form for (search results, thinking, server tool
 * results, ...): the provider reads them, so they count at their JSON's tokens.
 */
function promptOf(chat: ChatRequest, native: MessagesRequest): PromptSize {
  const prompt = measurePrompt(chat);
  let untranslated = 0;
  for (const message of native.messages) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content as unknown[])
      if (isObject(block) && !TRANSLATED_BLOCKS.has(String(block.type)))
        untranslated += countTextTokens(JSON.stringify(block));
  }
  return { tokens: prompt.tokens + untranslated };
}

/** Message blocks the chat translation carries (their tokens are in its measure). */
const TRANSLATED_BLOCKS = new Set(['text', 'image', 'document', 'tool_use', 'tool_result']);

/** A chat relay's events (settled before its last) as Messages events; its error event as Anthropic's. */
async function* asMessagesEvents(
  events: AsyncGenerator<ChatStreamEvent, void, undefined>,
  writer: MessagesStreamWriter,
): AsyncGenerator<StreamEvent, void, undefined> {
  for await (const { data } of events) {
    if (data === DONE.data) {
      yield* writer.end();
    } else if (isErrorEnvelope(data)) {
      const status = STATUS_OF.get(data.error.code) ?? 502;
      yield messagesEvent('error', { error: anthropicErrorBody(status, data.error.message).error });
      return;
    } else {
      yield* writer.write(data);
    }
  }
}
