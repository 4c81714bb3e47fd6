/**
 * The request path of POST /v1/chat/completions, top to bottom:
 *   authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record
 * HTTP concerns (parsing, writing bytes) stay in `http/`; money, limits and providers stay behind their modules.
 * The endpoints translated to chat (Messages, Responses) take steps 3-7 from here: `meteredChat`, `answerChat`.
 */
import type { Reservation } from '../billing/index.js';
import { promptText } from '../events/index.js';
import { chatStreamWay, chatWay } from '../routing/index.js';
import { countTextTokens, measurePrompt, type PromptSize } from '../tokens/index.js';
import type { ChatCompletion, ChatRequest, UpstreamCompletion } from '../wire/index.js';
import { authenticate, measured } from './admit.js';
import { CHAT, authorizedModel, fallbackModels } from './authorize.js';
import type { RequestContext, GatewayDeps } from './deps.js';
import { admitMetered, meteredCall, type Admitted, type Authenticated, type MeteredRequest } from './metered.js';
import { relayChatStream, type ChatStreamEvent } from './relay.js';
import type { Answer, RequestInput } from './request.js';
import { validateChatRequest } from './schema.js';
import { finishReasonOf } from './openai-stream.js';
import { billedUsage, settleAnswer } from './settle.js';
import { chatUsage } from '../pricing/index.js';

export async function createChatCompletion(input: RequestInput, deps: GatewayDeps): Promise<Answer<ChatCompletion>> {
  const started = performance.now();

  // 1. Authenticate: the key and its permission (before the body is looked at, so a keyless request gets 401),
  // then the body and the models it asks for.
  const key = await authenticate(deps, input, 'chat');
  const body = validateChatRequest(input.body);
  const model = authorizedModel(deps, key, body.model, CHAT);
  const fallbacks = fallbackModels(deps, key, body.models, CHAT);
  const request = await measured(deps, input, key, () => meteredChat({ input, key, model, fallbacks, started }, body));

  // 2. Idempotency: a retry with the same Idempotency-Key gets the first answer back, without running or charging.
  return deps.idempotency.run(key, input, async () => {
    // 3-4. Route, the rate limits and the credit hold; 5-7. the call, its relay or settlement, the record.
    return answerChat(await admitMetered(deps, request), body);
  });
}

/**
 * A chat body's admission: its prompt (every field that goes upstream counts, so no field is a free channel past
 * the token limits or the hold) and completion bound. `prompt` is the measure when more than `body` may go upstream
 * (a native body).
 */
export function meteredChat(
  authenticated: Authenticated,
  body: ChatRequest,
  prompt: PromptSize = measurePrompt(body),
): MeteredRequest {
  const { model } = authenticated;
  return {
    ...authenticated,
    timeoutMs: body.timeout_ms,
    hold: {
      promptTokens: prompt.tokens,
      requestedMaxTokens: requestedCompletionBound(body),
      choices: body.n ?? 1,
      modelMaxTokens: model.maxTokens,
      contextLength: model.contextLength,
    },
    userId: body.user,
    stream: body.stream === true,
    promptText: () => promptText(body.messages),
  };
}

/** A chat answer: settled (with its charge) or a relayed stream, with the context that metered it. */
export type ChatAnswer = { headers: Record<string, string>; context: RequestContext } & (
  | { kind: 'json'; body: ChatCompletion; chargedNano: bigint }
  | { kind: 'stream'; events: AsyncGenerator<ChatStreamEvent, void, undefined> }
);

/**
 * Steps 5-7 of an admitted chat body: the call (retries and fallbacks inside the router; a failure releases the
 * hold), then a stream relayed (settled before its last event) or an answer settled before it leaves.
 */
export async function answerChat(admitted: Admitted, body: ChatRequest): Promise<ChatAnswer> {
  const upstream = withLoweredBound(body, admitted.reservation);
  const { signal } = admitted.request.input;
  if (body.stream) {
    const { context, result, headers } = await meteredCall(admitted, chatStreamWay(upstream));
    const includeUsage = body.stream_options?.include_usage === true;
    return { kind: 'stream', headers, context, events: relayChatStream(context, result, signal, includeUsage) };
  }
  const { context, result, headers } = await meteredCall(admitted, chatWay(upstream));
  return { kind: 'json', headers, context, ...(await settleCompletion(context, result)) };
}

/**
 * The body with the completion bound admission allowed, when the budget lowered it (in both fields when both are
 * sent, so the provider honours it whichever it reads).
 */
function withLoweredBound(body: ChatRequest, reservation: Reservation): ChatRequest {
  if (!reservation.admission.lowered) return body;
  const lowered = { ...body };
  if (body.max_completion_tokens != null) lowered.max_completion_tokens = reservation.maxTokens;
  if (body.max_tokens != null || body.max_completion_tokens == null) lowered.max_tokens = reservation.maxTokens;
  return lowered;
}

/**
 * 6. Settles an answered completion at the actual usage, durable before the response leaves; 7. records it off the
 * path. Returns the completion as the client gets it (the model's id, the billed usage and its cost) and the charge.
 */
export async function settleCompletion(
  context: RequestContext,
  completion: UpstreamCompletion,
): Promise<{ body: ChatCompletion; chargedNano: bigint }> {
  const billed = await settleAnswer(
    context,
    () =>
      chatUsage(
        completion.usage,
        { prompt: context.promptTokens, completion: () => completionTokensOf(completion) },
        completion.service_tier,
      ),
    () => completionText(completion),
    { answerId: completion.id, finishReason: finishReasonOf(completion.choices) },
  );
  const body = { ...completion, model: context.model.id, usage: billedUsage(completion.usage, billed) };
  return { body, chargedNano: billed.chargedNano };
}

/** The completion bound the provider will honour: the larger of `max_tokens` and `max_completion_tokens` when both are sent. */
function requestedCompletionBound(body: ChatRequest): number | undefined {
  const bounds = [body.max_tokens, body.max_completion_tokens].filter(
    (bound): bound is number => typeof bound === 'number',
  );
  return bounds.length ? Math.max(...bounds) : undefined;
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Completion tokens of an answer whose upstream reported no usage. */
function completionTokensOf(completion: UpstreamCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (typeof choice.message.content === 'string') tokens += countTextTokens(choice.message.content);
    for (const { function: fn } of choice.message.tool_calls ?? [])
      tokens += countTextTokens(textOf(fn.name) + textOf(fn.arguments));
  }
  return tokens;
}

/** The text of an answer's first choice (the `completion` of llm.completion). */
function completionText(completion: UpstreamCompletion): string {
  const content = completion.choices[0]?.message.content;
  return typeof content === 'string' ? content : '';
}
