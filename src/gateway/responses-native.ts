/**
 * A Responses request passed through to OpenAI itself: chat's admission (with the native body's own measure),
 * the body forwarded with the deployment's model name through the router's retries and fallbacks, the answer
 * metered from its `usage` (input tokens as prompt, output tokens as completion) and returned as OpenAI sent it,
 * with the catalog's model id and the billed usage's cost.
 */
import { usdNumber } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import {
  billedResponse,
  inputText,
  nativeUsage,
  outputText,
  responseId,
  type ResponseRequest,
} from '../protocols/openai-responses/index.js';
import type { ChatRequest, ResponsesCall, ResponsesJson } from '../providers/index.js';
import type { AttemptCall, Deployment, Route } from '../routing/index.js';
import { countTextTokens, measurePrompt, type PromptSize } from '../tokens/index.js';
import { withoutRoutingFields } from '../wire/index.js';
import { admitChat } from './chat.js';
import type { GatewayDeps } from './deps.js';
import { failed } from './fail.js';
import type { ResponseRequestState, ResponseResult } from './responses-request.js';
import { openResponseStream, relayResponseStream } from './responses-relay.js';
import { settleAnswer, upstreamCount } from './settle.js';

export async function answerNatively(
  request: ResponseRequestState,
  deps: GatewayDeps,
  route: Route,
): Promise<ResponseResult> {
  const { input, key, body, model, fallbacks, started, store } = request;
  // Admission as chat's, of a chat request standing for this one: its completion bound and stream flag, and the
  // prompt text for llm.* events; the hold is sized by the native body's own measure.
  const standIn: ChatRequest = { model: body.model, messages: [{ role: 'user', content: inputText(body) }] };
  if (body.max_output_tokens != null) standIn.max_tokens = body.max_output_tokens;
  if (body.stream) standIn.stream = true;
  if (body.user !== undefined) standIn.user = body.user;
  const admitted = { input, key, body: standIn, model, fallbacks, started };
  const { headers, contextOf } = await admitChat(admitted, deps, measureNative(body), route);
  const { reservation } = contextOf(route);
  const forwarded = withoutRoutingFields(body);
  let upstream: ResponsesJson = forwarded;
  if (reservation.admission.lowered) upstream = { ...forwarded, max_output_tokens: reservation.maxTokens };
  // Kept (unless `store: false`) with the provider that holds it: a later `previous_response_id` goes back there.
  const remember = async (id: string | undefined, providerId: string) => {
    if (body.store === false || id === undefined) return;
    await store.record({ id, accountId: key.accountId, providerId, stateful: true, now: Date.now() });
  };
  const call = { signal: input.signal, requestId: input.requestId, timeoutMs: deps.upstreamTimeoutMs };
  const callOf = (deployment: Deployment, attempt: AttemptCall): ResponsesCall => ({
    ...attempt,
    body: { ...upstream, model: deployment.upstreamModel },
  });

  if (body.stream) {
    const routed = await deps.router.run(route, call, {
      streaming: true,
      attempt: (deployment, attempt) => openResponseStream(deployment, callOf(deployment, attempt)),
    });
    const context = contextOf(routed);
    if (!routed.ok) throw failed(context, routed.error, input.signal);
    headers['x-tollgate-provider'] = routed.providerId;
    const keep = (id: string | undefined) => remember(id, routed.providerId).catch(() => undefined);
    return { kind: 'stream', headers, events: relayResponseStream(context, routed.result, input.signal, keep) };
  }
  const routed = await deps.router.run(route, call, {
    streaming: false,
    attempt: (deployment, attempt) => respond(deployment, callOf(deployment, attempt)),
  });
  const context = contextOf(routed);
  if (!routed.ok) throw failed(context, routed.error, input.signal);
  headers['x-tollgate-provider'] = routed.providerId;
  const answer = routed.result;

  // Settle at the upstream's usage (or tollgate's count of the output), durable before the answer leaves.
  const used = () => {
    const usage = nativeUsage(answer);
    return {
      prompt: upstreamCount(usage?.input) ?? context.promptTokens,
      completion: upstreamCount(usage?.output) ?? countTextTokens(outputText(answer)),
    };
  };
  const billed = await settleAnswer(context, input.signal, used, () => outputText(answer));
  const { promptTokens, completionTokens, chargedNano } = billed;
  await remember(responseId(answer), routed.providerId).catch(() => undefined);
  const cost = usdNumber(chargedNano);
  return {
    kind: 'json',
    headers,
    body: billedResponse(answer, context.model.id, { promptTokens, completionTokens, cost }),
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

/**
 * The native body's prompt: every field that goes upstream, in chat's measure. A continued conversation's earlier
 * turns are held by OpenAI and billed by its count, so its settlement has no ceiling.
 */
function measureNative(body: ResponseRequest): PromptSize {
  const { model: _model, stream: _stream, ...forwarded } = body;
  const size = measurePrompt({ ...forwarded, messages: [] });
  return body.previous_response_id ? { ...size, ceiling: Number.MAX_SAFE_INTEGER } : size;
}
