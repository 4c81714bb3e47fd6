/**
 * The request path of POST /v1/responses (OpenAI's Responses API), in chat's steps:
 *   authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record
 * A model whose deployments all serve the Responses API natively (OpenAI itself) gets the body passed through
 * (`responses-native.ts`); any other is translated through chat (`responses-chat.ts`). A response id is bound to
 * the account it was answered to: `previous_response_id` is looked up for that account only.
 */
import { GatewayError } from '../errors/index.js';
import { FINAL_EVENTS, ResponseRequestSchema } from '../protocols/openai-responses/index.js';
import type { Route } from '../routing/index.js';
import type { KeyRecord, ResponseStore, StoredResponse } from '../storage/index.js';
import { authenticate } from './admit.js';
import { CHAT, authorizedModel, fallbackModels } from './authorize.js';
import type { GatewayDeps } from './deps.js';
import type { RequestInput } from './request.js';
import type { StreamProtocol } from './idempotency.js';
import { answerThroughChat } from './responses-chat.js';
import { answerNatively } from './responses-native.js';
import type { ResponseRequestState, ResponseResult } from './responses-request.js';
import { compiledValidator } from './schema.js';

const validate = compiledValidator(ResponseRequestSchema);

/** A stream is complete once its Response is (completed, or incomplete at its token bound). */
const RESPONSES_PROTOCOL: StreamProtocol = {
  endpoint: 'responses',
  isLast: (event) => FINAL_EVENTS.has(event.event ?? ''),
};

export type { ResponseResult } from './responses-request.js';

export async function createResponse(
  input: RequestInput,
  deps: GatewayDeps,
  store: ResponseStore,
): Promise<ResponseResult> {
  const started = performance.now();

  // 1. Authenticate: the key, the body, the models the key may use, and the previous response if one is named.
  const key = await authenticate(deps, input, 'chat');
  const body = validate(input.body);
  const model = authorizedModel(deps, key, body.model, CHAT);
  const fallbacks = fallbackModels(deps, key, body.models, CHAT);
  if (body.background === true)
    throw new GatewayError('invalid_request', {
      message: 'Background responses are not supported; send the request without background',
      param: 'background',
    });
  const previous = body.previous_response_id ? await heldResponse(store, key, body.previous_response_id) : undefined;

  // 2. Idempotency: a retry with the same Idempotency-Key gets the first answer back, without running or charging.
  const request: ResponseRequestState = { input, key, body, model, fallbacks, started, store, previous };
  return deps.idempotency.run(
    key,
    input,
    () => {
      // 3. Route: natively when every deployment that may answer serves the Responses API (the one that holds the
      // previous response, when there is one); otherwise through chat.
      const route = deps.router.route(model, key.environment, { fallbacks, timeoutMs: body.timeout_ms });
      const native = nativeRoute(route, previous);
      if (native) return answerNatively(deps, request, native);
      if (previous)
        throw new GatewayError('invalid_request', {
          message: `The model '${model.id}' is not served by '${previous.providerId}', which holds the previous response; continue with a model it serves, or send the conversation in 'input'`,
          param: 'previous_response_id',
        });
      return answerThroughChat(deps, request, route);
    },
    RESPONSES_PROTOCOL,
  );
}

/**
 * The previous response, when this account has it and its provider keeps it: an unknown id and another account's
 * are the same 404, never forwarded; one answered by a provider that keeps nothing (a translated answer, the
 * sandbox) is a 400 that says so.
 */
async function heldResponse(store: ResponseStore, key: KeyRecord, id: string): Promise<StoredResponse> {
  const held = await store.find(key.accountId, id);
  if (!held)
    throw new GatewayError('not_found', {
      message: `Previous response with id '${id}' not found.`,
      param: 'previous_response_id',
    });
  if (!held.stateful || key.environment === 'test')
    throw new GatewayError('invalid_request', {
      message: `The response '${id}' was answered by '${key.environment === 'test' ? 'sandbox' : held.providerId}', which does not keep responses: send the whole conversation in 'input' instead of 'previous_response_id'`,
      param: 'previous_response_id',
    });
  return held;
}

/** The route's deployments when all of them serve the Responses API natively (only the holder's, to continue). */
function nativeRoute(route: Route, previous: StoredResponse | undefined): Route | undefined {
  const candidates = previous
    ? route.candidates.filter((deployment) => deployment.providerId === previous.providerId)
    : route.candidates;
  const native =
    candidates.length > 0 &&
    candidates.every((d) => d.provider.respond !== undefined && d.provider.streamResponse !== undefined);
  if (!native) return undefined;
  return candidates === route.candidates ? route : { ...route, providerId: candidates[0]!.providerId, candidates };
}
