/**
 * THE request path of POST /v1/chat/completions, top to bottom:
 *   authenticate -> (idempotency) -> admit (rate limits, credit reservation) -> route -> relay (JSON or stream) -> settle -> emit
 * HTTP concerns (parsing, writing bytes) stay in `http/`; money, limits and providers stay behind their modules.
 */
import { requireModelAllowed, requirePermission } from '../auth/index.js';
import { usdNumber } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import type { ChatCompletion, ChatRequest } from '../providers/types.js';
import { measurePrompt } from '../tokens/index.js';
import { completionText, completionTokensOf, emitUnsettledError, finish, settleOrFail, upstreamCount, type ChatContext, type GatewayDeps } from './context.js';
import { rateLimitHeaders } from './headers.js';
import { relayStream } from './relay.js';
import { validateChatRequest } from './schema.js';
import { toGatewayError } from './upstream-errors.js';
import type { CatalogModel } from '../catalog/index.js';
import type { Route, StreamStart } from '../routing/index.js';
import type { KeyRecord } from '../storage/index.js';

export interface ChatInput {
  authorization: string | undefined;
  /** The parsed JSON body, not yet validated. */
  body: unknown;
  /** The `Idempotency-Key` header, if any. */
  idempotencyKey?: string | undefined;
  requestId: string;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Receives the request's outcome for the access log (ids, model, provider, cost; never the key). */
  log(fields: Record<string, unknown>): void;
}

export type ChatResult =
  | { kind: 'json'; headers: Record<string, string>; body: ChatCompletion }
  | { kind: 'stream'; headers: Record<string, string>; events: AsyncGenerator<string, void, undefined> };

export async function createChatCompletion(input: ChatInput, deps: GatewayDeps): Promise<ChatResult> {
  const started = performance.now();

  // 1. Authenticate: the key, its permissions, then the body and the model it asks for.
  const key = await deps.auth.authenticate(input.authorization);
  requirePermission(key, 'chat');
  const body = validateChatRequest(input.body);
  const model = deps.catalog.resolve(body.model);
  requireModelAllowed(key, [body.model, model.id, ...model.aliases]);
  const fallbacks = body.models?.map((name) => allowedModel(deps, key, name));
  // A retry with the same Idempotency-Key gets the first answer back, without running or charging again.
  const request: Authenticated = { input, key, body, model, fallbacks, started };
  return deps.idempotency.run(key, input.idempotencyKey, input.body, input.requestId, () => answer(request, deps));
}

/** What authentication established about one request. */
interface Authenticated {
  input: ChatInput;
  key: KeyRecord;
  body: ChatRequest;
  model: CatalogModel;
  fallbacks: CatalogModel[] | undefined;
  started: number;
}

async function answer({ input, key, body, model, fallbacks, started }: Authenticated, deps: GatewayDeps): Promise<ChatResult> {
  const account = await deps.wallet.accounts.get(key.accountId);
  if (!account) throw new GatewayError('invalid_api_key');
  const route = deps.router.route(model, key.environment, { fallbacks, timeoutMs: body.timeout_ms });

  // 2. Admit: rate limits first (they count requests), then the credit reservation. Every field that goes
  // upstream counts as prompt, so no field is a free channel past the token limits or the hold.
  const prompt = measurePrompt(body);
  const promptTokens = prompt.tokens;
  const limits = deps.limitsFor(account);
  const rate = await deps.limiter.admit(account.id, limits, promptTokens);
  const headers = rateLimitHeaders(rate, route.providerId);
  if (!rate.allowed) {
    deps.metrics.rateLimited.inc({ code: 'rate_limit_exceeded' });
    throw new GatewayError('rate_limit_exceeded', { retryAfter: rate.retryAfterSeconds, headers });
  }
  const reservation = await deps.wallet.reserve({
    requestId: input.requestId,
    account,
    key,
    price: route.price,
    promptTokens,
    promptCeiling: prompt.ceiling,
    requestedMaxTokens: requestedCompletionBound(body),
    choices: body.n ?? 1,
    modelMaxTokens: model.maxTokens,
    contextLength: model.contextLength,
  });

  // 3. Route: the router sets each deployment's model name; a lower completion bound when the budget demands it
  // (in both fields when both are sent, so the provider honours it whichever it reads).
  const upstreamBody: ChatRequest = { ...body };
  if (reservation.admission.lowered) {
    if (body.max_completion_tokens != null) upstreamBody.max_completion_tokens = reservation.maxTokens;
    if (body.max_tokens != null || body.max_completion_tokens == null) upstreamBody.max_tokens = reservation.maxTokens;
    headers['x-tollgate-max-tokens-lowered'] = String(reservation.maxTokens);
  }
  const context: ChatContext = {
    requestId: input.requestId,
    model,
    providerId: route.providerId,
    promptTokens,
    reservation,
    started,
    deps,
    body,
    log: input.log,
  };
  const call = { body: upstreamBody, signal: input.signal, requestId: input.requestId, timeoutMs: deps.upstreamTimeoutMs };

  // 4. Call (retries and fallbacks inside the router), then relay: a stream is handed to HTTP as a generator that
  // settles before its last event. The context then names the deployment (and model) that answered.
  if (body.stream) {
    let start: StreamStart;
    try {
      start = await deps.router.stream(route, call);
    } catch (error) {
      throw fail(answeredBy(context, route, headers), error, input.signal);
    }
    answeredBy(context, route, headers);
    return { kind: 'stream', headers, events: relayStream(context, start.first, start.chunks, body, input.signal) };
  }

  let completion: ChatCompletion;
  let usedPrompt: number;
  let usedCompletion: number;
  try {
    completion = await deps.router.complete(route, call);
    // Counted here too: whatever fails before the settlement releases the hold (a 502, not a hold left open).
    usedPrompt = upstreamCount(completion.usage?.prompt_tokens) ?? promptTokens;
    usedCompletion = upstreamCount(completion.usage?.completion_tokens) ?? completionTokensOf(completion);
  } catch (error) {
    throw fail(answeredBy(context, route, headers), error, input.signal);
  }
  answeredBy(context, route, headers);

  // 5. Settle at the actual usage (durable before the response leaves), then 6. emit.
  const answered = { text: () => completionText(completion) };
  const { promptTokens: billedPrompt, completionTokens: billedCompletion, chargedNano } = await settleOrFail(context, usedPrompt, usedCompletion, answered);
  completion.model = context.model.id;
  completion.usage = {
    ...completion.usage,
    prompt_tokens: billedPrompt,
    completion_tokens: billedCompletion,
    total_tokens: billedPrompt + billedCompletion,
    cost: usdNumber(chargedNano),
  };
  finish(context, { ok: true, promptTokens: billedPrompt, completionTokens: billedCompletion, chargedNano, generationMs: 0 });
  return { kind: 'json', headers, body: completion };
}

function answeredBy(context: ChatContext, route: Route, headers: Record<string, string>): ChatContext {
  context.model = route.model;
  context.providerId = headers['x-tollgate-provider'] = route.providerId;
  return context;
}

/** The completion bound the provider will honour: the larger of `max_tokens` and `max_completion_tokens` when both are sent. */
function requestedCompletionBound(body: ChatRequest): number | undefined {
  const bounds = [body.max_tokens, body.max_completion_tokens].filter((bound): bound is number => typeof bound === 'number');
  return bounds.length ? Math.max(...bounds) : undefined;
}

/** A fallback model of the request's `models`: known, and allowed to the key. */
function allowedModel(deps: GatewayDeps, key: Parameters<typeof requireModelAllowed>[0], name: string): CatalogModel {
  const model = deps.catalog.find(name);
  if (!model) throw new GatewayError('model_not_found', { message: `The model '${name}' does not exist`, param: 'models' });
  requireModelAllowed(key, [name, model.id, ...model.aliases]);
  return model;
}

function fail(context: ChatContext, error: unknown, signal: AbortSignal): GatewayError {
  context.reservation.release();
  const mapped = signal.aborted ? new GatewayError('invalid_request', { message: 'The client closed the request' }) : toGatewayError(error);
  const told = { code: mapped.code, message: mapped.message };
  emitUnsettledError(context, told);
  finish(context, { ok: false, status: mapped.status, promptTokens: 0, completionTokens: 0, chargedNano: 0n, generationMs: 0, error: told });
  return mapped;
}

