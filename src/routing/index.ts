/**
 * Chooses who answers a request and makes the call: the model's deployments in order (the first by weight when
 * weights are set), then the request's fallback models; retries with backoff on retryable failures, skips open
 * circuits, and returns which deployment answered (or failed last). Test keys always go to the sandbox. Inputs
 * are left untouched: each attempt gets its own call, with the deployment's model name and limits.
 */
import type { CatalogModel, HealthSource, LiveFigures } from '../catalog/index.js';
import { SANDBOX_PROVIDER_ID, type Config, type RoutingConfig } from '../config/index.js';
import { GatewayError } from '../errors/index.js';
import { SpanKind, withSpan } from '../observability/index.js';
import {
  ProviderSet,
  UpstreamError,
  type UpstreamCompletion,
  type ChatRequest,
  type EmbeddingCall,
  type ProviderCall,
  type UpstreamEmbeddings,
} from '../providers/index.js';
import type { Environment } from '../storage/index.js';
import { backoffMs, pause } from './attempts.js';
import { Breaker } from './breaker.js';
import { Health, type Deployment } from './health.js';
import { openStream, type StreamStart } from './open-stream.js';
import { reasonOf, verdict } from './upstream-errors.js';
import { withoutRoutingFields } from '../wire/index.js';

export { Breaker, type BreakerState } from './breaker.js';
export type { Deployment } from './health.js';
export type { StreamStart } from './open-stream.js';
export { fromUpstream, verdict, type Verdict } from './upstream-errors.js';

/** Who may answer a request, chosen before any credit is held. */
export interface Route {
  /** The requested model. */
  readonly model: CatalogModel;
  /** The provider of the first candidate (`x-tollgate-provider` until a deployment answers). */
  readonly providerId: string;
  /** The models that may answer (the requested one, then fallbacks): the hold is at the dearest of their prices. */
  readonly models: readonly CatalogModel[];
  readonly candidates: readonly Deployment[];
  /** Epoch ms by which the upstream must have started answering (request `timeout_ms`); 0 = none. */
  readonly deadline: number;
}

/**
 * The outcome of a routed call, with the deployment it names: the one that answered, or the last one that failed
 * (the route's first candidate when none was tried). A failure is returned, not thrown, so it names it too.
 */
export type Routed<T> =
  | { readonly ok: true; readonly result: T; readonly model: CatalogModel; readonly providerId: string }
  | { readonly ok: false; readonly error: unknown; readonly model: CatalogModel; readonly providerId: string };

export interface RouteOptions {
  /** The request's `models`: fallback models after the requested one. */
  fallbacks?: readonly CatalogModel[] | undefined;
  /** The request's `timeout_ms`. */
  timeoutMs?: number | undefined;
}

export class Router {
  private readonly providers: ProviderSet;
  private readonly fleet: Health;
  private readonly settings: RoutingConfig;
  private readonly sandboxed = new Map<string, Deployment[]>();

  /** `catalog`: the models whose deployments are routed to. */
  constructor(
    config: Config,
    options: { catalog?: { readonly models: readonly CatalogModel[] }; performance?: LiveFigures } = {},
  ) {
    this.settings = config.routing;
    this.providers = new ProviderSet(config);
    this.fleet = new Health(options.catalog?.models ?? [], this.providers, config.routing, options.performance);
  }

  /** The circuit breakers' view of each model, for the catalog's `status` (`catalog.setHealth(router.health)`). */
  get health(): HealthSource {
    return this.fleet;
  }

  route(model: CatalogModel, environment: Environment, options?: RouteOptions): Route {
    const deadline = options?.timeoutMs ? Date.now() + options.timeoutMs : 0;
    if (environment === 'test')
      return { model, providerId: SANDBOX_PROVIDER_ID, models: [model], candidates: this.sandbox(model), deadline };
    let candidates = this.fleet.deployments(model);
    let models: readonly CatalogModel[] = [model];
    const fallbacks = options?.fallbacks;
    // The common case reuses the model's own list: no allocation, no draw.
    if (fallbacks?.length || this.fleet.weighted(model)) {
      models = [model, ...(fallbacks ?? []).filter((m) => m.id !== model.id)];
      candidates = models.flatMap((m) => ordered(this.fleet.deployments(m)));
    }
    for (const deployment of candidates) {
      if (deployment.breaker.allows())
        return { model, providerId: deployment.providerId, models, candidates, deadline };
    }
    throw new GatewayError('model_unavailable', {
      message: `The model '${model.id}' is unavailable: ${model.statusMessage}`,
    });
  }

  async close(): Promise<void> {
    this.fleet.close();
    await this.providers.close();
  }

  /**
   * Any other kind of call (each endpoint's own): `way.attempt` asks one deployment, and gets the same retries,
   * fallbacks, circuits and `timeout_ms` as chat.
   */
  run<T>(route: Route, call: AttemptCall, way: Way<T>): Promise<Routed<T>> {
    return route.deadline ? this.withDeadline(route, call, way) : this.attempts(route, call, way, call.signal);
  }

  private async withDeadline<T>(route: Route, call: AttemptCall, way: Way<T>): Promise<Routed<T>> {
    // The request's `timeout_ms`: a timer (undici's own timeouts tick by the second) that aborts the attempts, not
    // the client's signal, and is cleared once the answer starts. Client aborts are forwarded.
    const client = call.signal;
    const controller = new AbortController();
    const forward = () => controller.abort(client.reason);
    client.addEventListener('abort', forward, { once: true });
    const timer = setTimeout(
      () => controller.abort(new Error('timeout_ms ran out')),
      Math.max(0, route.deadline - Date.now()),
    );
    try {
      const routed = await this.attempts(route, call, way, controller.signal);
      if (routed.ok || client.aborted || !controller.signal.aborted) return routed;
      const error = new UpstreamError(routed.providerId, 'timeout', `no answer within the request's timeout_ms`, {
        cause: routed.error,
      });
      return { ok: false, error, model: routed.model, providerId: routed.providerId };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Every candidate in turn, each retried while its failures are retryable and its circuit allows. */
  private async attempts<T>(route: Route, call: AttemptCall, way: Way<T>, signal: AbortSignal): Promise<Routed<T>> {
    // The deployment the outcome names: the one that answered or last failed (not one the client abandoned).
    let model = route.model;
    let providerId = route.providerId;
    let lastError: unknown;
    let unrecorded: Deployment | undefined;
    try {
      for (const deployment of route.candidates) {
        if (!deployment.breaker.allows()) continue;
        for (let attempt = 0; ; attempt++) {
          let timeoutMs = call.timeoutMs;
          if (route.deadline) {
            const remaining = route.deadline - Date.now();
            if (remaining <= 0)
              throw new UpstreamError(deployment.providerId, 'timeout', `no answer within the request's timeout_ms`);
            timeoutMs = Math.min(timeoutMs, remaining);
          }
          // A failed attempt followed by another counts for uptime here; the last one is the request's outcome.
          if (unrecorded) this.fleet.recordFailure(unrecorded);
          unrecorded = undefined;
          const attemptCall: AttemptCall = { signal, requestId: call.requestId, timeoutMs };
          try {
            const result = await withSpan<T>(
              `upstream ${deployment.providerId}`,
              {
                'gen_ai.system': deployment.providerId,
                'gen_ai.request.model': deployment.upstreamModel,
                'tollgate.attempt': attempt + 1,
                'tollgate.stream': way.streaming,
              },
              () => way.attempt(deployment, attemptCall),
              SpanKind.CLIENT,
            );
            this.fleet.succeeded(deployment);
            return { ok: true, result, model: deployment.model, providerId: deployment.providerId };
          } catch (error) {
            if (signal.aborted) throw error;
            model = deployment.model;
            providerId = deployment.providerId;
            const next = verdict(error);
            if (next === 'stop') throw error;
            lastError = error;
            unrecorded = deployment;
            if (next === 'retry') this.fleet.failed(deployment, reasonOf(error));
            if (next !== 'retry' || attempt >= this.settings.retries || !deployment.breaker.allows()) break;
            await pause(backoffMs(attempt, this.settings.backoff_ms, this.settings.max_backoff_ms), signal);
          }
        }
      }
    } catch (error) {
      return { ok: false, error, model, providerId };
    }
    const error =
      lastError ??
      new GatewayError('model_unavailable', {
        message: `The model '${route.model.id}' is unavailable: ${route.model.statusMessage}`,
      });
    return { ok: false, error, model, providerId };
  }

  private sandbox(model: CatalogModel): Deployment[] {
    let list = this.sandboxed.get(model.id);
    if (!list) {
      const upstreamModel = model.providerId === SANDBOX_PROVIDER_ID ? model.upstreamModel : 'echo';
      const breaker = new Breaker(Number.POSITIVE_INFINITY, 1);
      list = [
        {
          model,
          providerId: SANDBOX_PROVIDER_ID,
          upstreamModel,
          weight: undefined,
          provider: this.providers.sandbox,
          breaker,
          probing: false,
        },
      ];
      this.sandboxed.set(model.id, list);
    }
    return list;
  }
}

/** What every attempt gets: the signal that ends it, the request id, and the time the upstream may take. */
export interface AttemptCall {
  signal: AbortSignal;
  requestId: string;
  timeoutMs: number;
}

/** How one deployment is asked: for the whole answer, or for a stream up to its first chunk with substance. */
export interface Way<T> {
  streaming: boolean;
  attempt(deployment: Deployment, call: AttemptCall): Promise<T>;
}

/** A chat request asked of each deployment for its whole answer. */
export function chatWay(body: ChatRequest): Way<UpstreamCompletion> {
  return {
    streaming: false,
    attempt: (deployment, attempt) => deployment.provider.complete(chatCall(body, deployment, attempt)),
  };
}

/** A chat request asked of each deployment as a stream, up to its first chunk with substance (see openStream). */
export function chatStreamWay(body: ChatRequest): Way<StreamStart> {
  return {
    streaming: true,
    attempt: (deployment, attempt) => openStream(deployment, chatCall(body, deployment, attempt)),
  };
}

/** An embeddings request asked of each deployment (a 400 from one that does not embed, never asked). */
export function embeddingsWay(body: EmbeddingCall['body']): Way<UpstreamEmbeddings> {
  return {
    streaming: false,
    attempt: (deployment, attempt) => {
      if (!deployment.provider.embed)
        throw new GatewayError('invalid_request', {
          message: `The model '${deployment.model.id}' is served by '${deployment.providerId}', which does not create embeddings`,
          param: 'model',
        });
      return deployment.provider.embed({ ...attempt, body: { ...body, model: deployment.upstreamModel } });
    },
  };
}

/** One deployment's chat call: its own model name and limits. */
function chatCall(body: ChatRequest, deployment: Deployment, attempt: AttemptCall): ProviderCall {
  return {
    ...attempt,
    body: upstreamBody(body, deployment.upstreamModel),
    defaultMaxTokens: deployment.model.maxTokens,
  };
}

/** The body one deployment gets: its own model name, without the routing fields (`models`, `timeout_ms`) upstreams would reject. */
function upstreamBody(body: ChatRequest, model: string): ChatRequest {
  return { ...withoutRoutingFields(body), model };
}

/** Deployments in configuration order, except that with weights the first is drawn by weight. */
function ordered(list: readonly Deployment[]): readonly Deployment[] {
  const weighted = list.filter((d) => d.weight !== undefined && d.breaker.allows());
  if (weighted.length === 0) return list;
  let ticket = Math.random() * weighted.reduce((sum, d) => sum + d.weight!, 0);
  const chosen = weighted.find((d) => (ticket -= d.weight!) < 0) ?? weighted[weighted.length - 1]!;
  return [chosen, ...list.filter((d) => d !== chosen)];
}
