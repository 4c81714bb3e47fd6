/**
 * The request path of POST /v1/chat/completions, top to bottom:
 *   authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record
 * HTTP concerns (parsing, writing bytes) stay in `http/`; money, limits and providers stay behind their modules.
 */
import type { CatalogModel } from '../catalog/index.js';
import { promptText } from '../events/index.js';
import type { ChatCompletion, ChatRequest, ProviderCall } from '../providers/index.js';
import type { Route } from '../routing/index.js';
import type { KeyRecord } from '../storage/index.js';
import { countTextTokens, measurePrompt, type PromptSize } from '../tokens/index.js';
import { authenticate, routeAndReserve } from './admit.js';
import { authorizedModel, fallbackModels } from './authorize.js';
import type { ChatContext, GatewayDeps } from './deps.js';
import { failed, type RequestInput } from './fail.js';
import { relayStream } from './relay.js';
import { validateChatRequest } from './schema.js';
import { billedUsage, settleAnswer, upstreamCount } from './settle.js';

export type ChatInput = RequestInput;

export type ChatResult =
  | { kind: 'json'; headers: Record<string, string>; body: ChatCompletion }
  | { kind: 'stream'; headers: Record<string, string>; events: AsyncGenerator<string, void, undefined> };

export async function createChatCompletion(input: ChatInput, deps: GatewayDeps): Promise<ChatResult> {
  const started = performance.now();

  // 1. Authenticate: the key and its permission (before the body is looked at, so a keyless request gets 401),
  // then the body and the models it asks for.
  const key = await authenticate(deps, input.authorization, 'chat');
  const body = validateChatRequest(input.body);
  const model = authorizedModel(deps, key, body.model);
  const fallbacks = fallbackModels(deps, key, body.models);

  // 2. Idempotency: a retry with the same Idempotency-Key gets the first answer back, without running or charging.
  const request: Authenticated = { input, key, body, model, fallbacks, started };
  return deps.idempotency.run(key, input.idempotencyKey, input.body, input.requestId, () => answer(request, deps));
}

/** What authentication established about one request. */
export interface Authenticated {
  input: ChatInput;
  key: KeyRecord;
  body: ChatRequest;
  model: CatalogModel;
  fallbacks: CatalogModel[] | undefined;
  started: number;
}

/** An admitted chat request: its headers so far, who may answer, the upstream call, and its context once routed. */
export interface Admitted {
  headers: Record<string, string>;
  route: Route;
  call: ProviderCall;
  contextOf(routed: { model: CatalogModel; providerId: string }): ChatContext;
}

async function answer(request: Authenticated, deps: GatewayDeps): Promise<ChatResult> {
  const { input } = request;
  const { headers, route, call, contextOf } = await admitChat(request, deps);

  // 5. Call and relay: retries and fallbacks happen inside the router, which names the deployment that answered
  // (or failed last). A failure releases the hold without charging. A stream goes to HTTP via a generator that
  // settles before its last event.
  if (request.body.stream) {
    const routed = await deps.router.stream(route, call);
    const context = contextOf(routed);
    if (!routed.ok) throw failed(context, routed.error, input.signal);
    headers['x-tollgate-provider'] = routed.providerId;
    return { kind: 'stream', headers, events: relayStream(context, routed.result, input.signal) };
  }
  const routed = await deps.router.complete(route, call);
  const context = contextOf(routed);
  if (!routed.ok) throw failed(context, routed.error, input.signal);
  headers['x-tollgate-provider'] = routed.providerId;
  return { kind: 'json', headers, body: await settleCompletion(context, routed.result, input.signal) };
}

/**
 * Steps 3 and 4 of a chat request (also of the endpoints translated to chat): route, then admit (rate limits,
 * credit hold). `prompt` is the request's measure when the caller forwards more than `body` (a native body);
 * `chosen`, the route when the caller chose it.
 */
export async function admitChat(
  { input, key, body, model, fallbacks, started }: Authenticated,
  deps: GatewayDeps,
  prompt: PromptSize = measurePrompt(body),
  chosen?: Route,
): Promise<Admitted> {
  // 3-4. Route, then the rate limits and the credit hold. Every field that goes upstream counts toward the prompt,
  // so no field is a free channel past the token limits or the hold.
  const promptTokens = prompt.tokens;
  const routable = { requestId: input.requestId, key, model, fallbacks, timeoutMs: body.timeout_ms };
  const hold = {
    promptTokens,
    promptCeiling: prompt.ceiling,
    requestedMaxTokens: requestedCompletionBound(body),
    choices: body.n ?? 1,
    modelMaxTokens: model.maxTokens,
    contextLength: model.contextLength,
  };
  const { route, headers, reservation } = await routeAndReserve(deps, routable, hold, chosen);
  // A lower completion bound when the budget demands it (in both fields when both are sent, so the provider
  // honours it whichever it reads).
  let upstreamBody = body;
  if (reservation.admission.lowered) {
    upstreamBody = { ...body };
    if (body.max_completion_tokens != null) upstreamBody.max_completion_tokens = reservation.maxTokens;
    if (body.max_tokens != null || body.max_completion_tokens == null) upstreamBody.max_tokens = reservation.maxTokens;
    headers['x-tollgate-max-tokens-lowered'] = String(reservation.maxTokens);
  }
  const call = {
    body: upstreamBody,
    signal: input.signal,
    requestId: input.requestId,
    timeoutMs: deps.upstreamTimeoutMs,
  };
  const contextOf = (routed: { model: CatalogModel; providerId: string }): ChatContext => {
    const { requestId, log } = input;
    return {
      requestId,
      model: routed.model,
      providerId: routed.providerId,
      promptTokens,
      reservation,
      started,
      deps,
      body,
      userId: body.user,
      stream: body.stream === true,
      promptText: () => promptText(body.messages),
      log,
    };
  };
  return { headers, route, call, contextOf };
}

/**
 * 6. Settle an answered completion at the actual usage, durable before the response leaves; 7. record (metrics,
 * log) off the path. Returns the completion as the client gets it: the model's id, the billed usage and its cost.
 */
export async function settleCompletion(
  context: ChatContext,
  completion: ChatCompletion,
  signal: AbortSignal,
): Promise<ChatCompletion> {
  return (await settleCompletionCharged(context, completion, signal)).completion;
}

/** `settleCompletion`, with the charge in nano-USD (for endpoints that tell the cost outside the body). */
export async function settleCompletionCharged(
  context: ChatContext,
  completion: ChatCompletion,
  signal: AbortSignal,
): Promise<{ completion: ChatCompletion; chargedNano: bigint }> {
  const billed = await settleAnswer(
    context,
    signal,
    () => ({
      prompt: upstreamCount(completion.usage?.prompt_tokens) ?? context.promptTokens,
      completion: upstreamCount(completion.usage?.completion_tokens) ?? completionTokensOf(completion),
    }),
    () => completionText(completion),
  );
  completion.model = context.model.id;
  completion.usage = billedUsage(completion.usage, billed);
  return { completion, chargedNano: billed.chargedNano };
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
function completionTokensOf(completion: ChatCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (typeof choice.message.content === 'string') tokens += countTextTokens(choice.message.content);
    for (const { function: fn } of choice.message.tool_calls ?? [])
      tokens += countTextTokens(textOf(fn.name) + textOf(fn.arguments));
  }
  return tokens;
}

/** The text of an answer's first choice (the `completion` of llm.completion). */
function completionText(completion: ChatCompletion): string {
  const content = completion.choices[0]?.message.content;
  return typeof content === 'string' ? content : '';
}
