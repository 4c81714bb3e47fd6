/**
 * Steps 3 to 5 of every metered endpoint, written once: route and admit what the endpoint holds
 * (`admitMetered`), then call whichever deployment answers (`meteredCall`). Each endpoint says only what it holds
 * (its `Hold`) and how a deployment is asked (its `Way`); settlement and relays take the `RequestContext` built here.
 */
import type { Reservation } from '../billing/index.js';
import type { CatalogModel } from '../catalog/index.js';
import type { AttemptCall, Route, Way } from '../routing/index.js';
import type { KeyRecord } from '../storage/index.js';
import { heldPrompt, routeAndReserve, type Hold } from './admit.js';
import type { GatewayDeps, RequestContext } from './deps.js';
import { exposureOf } from './exposure.js';
import { failed } from './fail.js';
import type { RequestInput } from './request.js';

/** What authentication established about a request: its key, and the models it may use (`model`, then `models`). */
export interface Authenticated {
  readonly input: RequestInput;
  readonly key: KeyRecord;
  readonly model: CatalogModel;
  readonly fallbacks: readonly CatalogModel[] | undefined;
  readonly started: number;
}

/** An authenticated request, and what it asks admission to hold. */
export interface MeteredRequest extends Authenticated {
  /** The request's `timeout_ms`. */
  readonly timeoutMs?: number | undefined;
  readonly hold: Hold;
  /** The body as the provider gets it, when not the client's own (a translation): what `exposureOf` reads. */
  readonly exposed?: unknown;
  /** The request's `user` (llm.* events' `userId`). */
  readonly userId: string | undefined;
  readonly stream: boolean;
  /** The id the client's answer will have, when the endpoint makes it (a translated answer's); else the upstream's. */
  readonly answerId?: string | undefined;
  /** The prompt's text for llm.* events, built only when an event is. */
  promptText(): string;
}

/** An admitted request: who may answer, the credit held, and the headers so far. */
export interface Admitted {
  readonly request: MeteredRequest;
  readonly deps: GatewayDeps;
  readonly route: Route;
  readonly reservation: Reservation;
  readonly headers: Record<string, string>;
  /** What was held, with what the body exposes beyond its text. */
  readonly hold: Hold;
}

/** A deployment's answer, with the context that settles it and the answer's headers (`x-tollgate-provider` set). */
export interface Called<T> {
  readonly context: RequestContext;
  readonly result: T;
  readonly headers: Record<string, string>;
}

/**
 * Steps 3 and 4: route (503 before any hold; the dearest candidate's price), the rate limits, then the credit hold.
 * A completion bound the budget lowered is told in `x-tollgate-max-tokens-lowered`; the endpoint puts it in its
 * body. An endpoint that chose its route itself (Responses, natively) passes it.
 */
export async function admitMetered(deps: GatewayDeps, request: MeteredRequest, chosen?: Route): Promise<Admitted> {
  const { input, key, model, fallbacks, timeoutMs } = request;
  const routable = { requestId: input.requestId, key, model, fallbacks, timeoutMs, signal: input.signal };
  const hold = exposedHold(request);
  const { route, headers, reservation } = await routeAndReserve(deps, routable, hold, chosen);
  if (reservation.admission.lowered) headers['x-tollgate-max-tokens-lowered'] = String(reservation.maxTokens);
  return { request, deps, route, reservation, headers, hold };
}

/**
 * Step 5: asks the route's deployments `way`, with retries and fallbacks inside the router. A request that got no
 * answer releases its hold, is recorded and told, and throws the client's error.
 */
export async function meteredCall<T>(admitted: Admitted, way: Way<T>): Promise<Called<T>> {
  const { deps, request, route, headers } = admitted;
  const { signal, requestId } = request.input;
  const call: AttemptCall = { signal, requestId, timeoutMs: deps.upstreamTimeoutMs };
  const routed = await deps.router.run(route, call, way);
  const context = contextOf(admitted, routed);
  if (!routed.ok) throw failed(context, routed.error, signal);
  headers['x-tollgate-provider'] = routed.providerId;
  return { context, result: routed.result, headers };
}

/**
 * The hold with what the body exposes beyond its text: content the provider fetches holds the whole context;
 * images, web searches and a service tier are priced.
 */
function exposedHold({ input, hold, exposed }: MeteredRequest): Hold {
  const exposure = exposureOf(exposed ?? input.body);
  return {
    ...hold,
    promptCeiling: exposure.unbounded ? hold.contextLength : hold.promptCeiling,
    images: exposure.images,
    webSearches: exposure.webSearches,
    serviceTier: exposure.serviceTier,
  };
}

/** The request's context once routing has named the deployment that answered (or failed last). */
function contextOf(
  { deps, request, reservation, hold }: Admitted,
  routed: { model: CatalogModel; providerId: string },
): RequestContext {
  const { input } = request;
  return {
    requestId: input.requestId,
    endpoint: input.endpoint,
    answerId: request.answerId,
    signal: input.signal,
    model: routed.model,
    providerId: routed.providerId,
    promptTokens: request.hold.promptTokens,
    promptCeiling: heldPrompt(hold),
    serviceTier: hold.serviceTier,
    images: hold.images ?? 0,
    reservation,
    started: request.started,
    deps,
    userId: request.userId,
    stream: request.stream,
    promptText: () => request.promptText(),
    log: input.log,
  };
}
