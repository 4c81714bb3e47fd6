/**
 * A Responses request passed through to OpenAI itself: admitted at the native body's own measure,
 * the body forwarded with the deployment's model name through the router's retries and fallbacks, the answer
 * metered from its `usage` (input tokens as prompt, output tokens as completion) and returned as OpenAI sent it,
 * with the catalog's model id and the billed usage's cost.
 */
import { usdNumber } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import {
  billedResponse,
  inputText,
  outputText,
  responseId,
  type ResponseRequest,
} from '../protocols/openai-responses/index.js';
import type { ResponsesCall, ResponsesJson } from '../providers/index.js';
import type { AttemptCall, Deployment, Route } from '../routing/index.js';
import { countTextTokens, measurePrompt, type PromptSize } from '../tokens/index.js';
import { withoutRoutingFields } from '../wire/index.js';
import type { GatewayDeps } from './deps.js';
import { measured } from './admit.js';
import { admitMetered, meteredCall, type MeteredRequest } from './metered.js';
import type { ResponseRequestState, ResponseResult } from './responses-request.js';
import { openResponseStream, relayResponseStream, responseEnd } from './responses-relay.js';
import { settleAnswer } from './settle.js';
import { responsesUsage } from '../pricing/index.js';
import { withSearchBounds } from './exposure.js';

export async function answerNatively(
  deps: GatewayDeps,
  request: ResponseRequestState,
  route: Route,
): Promise<ResponseResult> {
  const { input, key, body, store } = request;
  const metered = await measured(deps, request.input, request.key, () => meteredNative(request));
  const admitted = await admitMetered(deps, metered, route);
  const { reservation } = admitted;
  const forwarded = withoutRoutingFields(body);
  let upstream: ResponsesJson = withSearchBounds(forwarded);
  if (reservation.admission.lowered) upstream = { ...upstream, max_output_tokens: reservation.maxTokens };
  // Kept (unless `store: false`) with the provider that holds it: a later `previous_response_id` goes back there.
  // With the tokens it carries into a request that continues it (its input and output), for that request's hold.
  const remember = async (id: string | undefined, providerId: string, contextTokens: number) => {
    if (body.store === false || id === undefined) return;
    await store.record({ id, accountId: key.accountId, providerId, stateful: true, contextTokens, now: Date.now() });
  };
  const callOf = (deployment: Deployment, attempt: AttemptCall): ResponsesCall => ({
    ...attempt,
    body: { ...upstream, model: deployment.upstreamModel },
  });

  if (body.stream) {
    const { context, result, headers } = await meteredCall(admitted, {
      streaming: true,
      attempt: (deployment, attempt) => openResponseStream(deployment, callOf(deployment, attempt)),
    });
    const keep = (id: string | undefined, contextTokens: number) =>
      remember(id, context.providerId, contextTokens).catch(() => undefined);
    return { kind: 'stream', headers, events: relayResponseStream(context, result, input.signal, keep) };
  }
  const {
    context,
    result: answer,
    headers,
  } = await meteredCall(admitted, {
    streaming: false,
    attempt: (deployment, attempt) => respond(deployment, callOf(deployment, attempt)),
  });

  // Settle at the upstream's usage (or tollgate's count of the output), durable before the answer leaves.
  const own = { prompt: context.promptTokens, completion: () => countTextTokens(outputText(answer)) };
  const used = () => responsesUsage(answer, own);
  const end = { answerId: typeof answer.id === 'string' ? answer.id : undefined, finishReason: responseEnd(answer) };
  const billed = await settleAnswer(context, used, () => outputText(answer), end);
  const { promptTokens, completionTokens, chargedNano } = billed;
  await remember(responseId(answer), context.providerId, promptTokens + completionTokens).catch(() => undefined);
  const cost = usdNumber(chargedNano);
  return {
    kind: 'json',
    headers,
    body: billedResponse(answer, context.model.id, { promptTokens, completionTokens, cost }),
  };
}

/**
 * What a native request holds: its own measure (every field that goes upstream), the previous response's context
 * that OpenAI adds to it (the whole context window when its size was not recorded), and `max_output_tokens`.
 */
function meteredNative(request: ResponseRequestState): MeteredRequest {
  const { body, model, previous } = request;
  const prompt = measureNative(body);
  const carried = previous?.contextTokens;
  return {
    ...request,
    timeoutMs: body.timeout_ms,
    hold: {
      promptTokens: prompt.tokens + (carried ?? 0),
      promptCeiling: previous && carried === undefined ? model.contextLength : undefined,
      requestedMaxTokens: body.max_output_tokens ?? undefined,
      choices: 1,
      modelMaxTokens: model.maxTokens,
      contextLength: model.contextLength,
    },
    userId: body.user,
    stream: body.stream === true,
    promptText: () => inputText(body),
  };
}

function respond(deployment: Deployment, call: ResponsesCall): Promise<ResponsesJson> {
  if (!deployment.provider.respond)
    throw new GatewayError('invalid_request', {
      message: `'${deployment.providerId}' does not serve the Responses API natively`,
      param: 'model',
    });
  return deployment.provider.respond(call);
}

/** The native body's prompt: every field that goes upstream, in chat's measure. */
function measureNative(body: ResponseRequest): PromptSize {
  const { model: _model, stream: _stream, ...forwarded } = body;
  return measurePrompt({ ...forwarded, messages: [] });
}
