/**
 * Chooses who answers a request and makes the call: the model's deployments in order (the first by weight when
 * weights are set), then the request's fallback models; retries with backoff on retryable failures, skips open
 * circuits, and tells which deployment answered. Test keys always go to the sandbox.
 *
 * Happy path cost: one small Route object and one call; timers and extra promises exist only when a retry happens.
 */
import type { Price } from '../billing/index.js';
import type { Catalog, CatalogModel, PerformanceTracker } from '../catalog/index.js';
import { SANDBOX_PROVIDER_ID, type Config, type RoutingConfig } from '../config/index.js';
import { GatewayError } from '../errors/index.js';
import { SpanKind, withSpan } from '../observability/index.js';
import { UpstreamError, type ChatCompletion, type ProviderCall } from '../providers/types.js';
import type { Environment } from '../storage/index.js';
import { backoffMs, pause, reasonOf, verdict } from './attempts.js';
import { Breaker } from './breaker.js';
import { Health, type Deployment } from './health.js';
import { openStream, type StreamStart } from './open-stream.js';
import { ProviderSet } from './providers.js';

export { Breaker, type BreakerState } from './breaker.js';
export type { Deployment } from './health.js';
export type { StreamStart } from './open-stream.js';
export { ProviderSet } from './providers.js';

export interface Route {
  /** The model that answered (a fallback model when the requested one failed); before the call, the requested one. */
  model: CatalogModel;
  /** The provider of the deployment that answered (`x-tollgate-provider`); before the call, the first candidate's. */
  providerId: string;
  /** What to reserve: the dearest price among the models that may answer. */
  price: Price;
  readonly candidates: readonly Deployment[];
  /** Epoch ms by which the upstream must have started answering (request `timeout_ms`); 0 = none. */
  readonly deadline: number;
}

export interface RouteOptions {
  /** The request's `models`: fallback models after the requested one. */
  fallbacks?: readonly CatalogModel[] | undefined;
  /** The request's `timeout_ms`. */
  timeoutMs?: number | undefined;
}

export class Router {
  private readonly providers: ProviderSet;
  private readonly health: Health;
  private readonly settings: RoutingConfig;
  private readonly sandboxed = new Map<string, Deployment[]>();

  constructor(config: Config, options: { catalog?: Catalog; performance?: PerformanceTracker } = {}) {
    this.settings = config.routing;
    this.providers = new ProviderSet(config);
    this.health = new Health(options.catalog?.models ?? [], this.providers, config.routing, options.performance);
    options.catalog?.setHealth(this.health);
  }

  route(model: CatalogModel, environment: Environment, options?: RouteOptions): Route {
    const deadline = options?.timeoutMs ? Date.now() + options.timeoutMs : 0;
    if (environment === 'test') return { model, providerId: SANDBOX_PROVIDER_ID, price: model.price, candidates: this.sandbox(model), deadline };
    let candidates = this.health.deployments(model);
    let price = model.price;
    const fallbacks = options?.fallbacks;
    // The common case reuses the model's own list: no allocation, no draw.
    if (fallbacks?.length || this.health.weighted(model)) {
      const models = [model, ...(fallbacks ?? []).filter((m) => m.id !== model.id)];
      candidates = models.flatMap((m) => ordered(this.health.deployments(m)));
      price = dearest(models);
    }
    for (const deployment of candidates) {
      if (deployment.breaker.allows()) return { model, providerId: deployment.providerId, price, candidates, deadline };
    }
    throw new GatewayError('model_unavailable', { message: `The model '${model.id}' is unavailable: ${model.statusMessage}` });
  }

  complete(route: Route, call: ProviderCall): Promise<ChatCompletion> {
    return this.run(route, call, false) as Promise<ChatCompletion>;
  }

  /** Opens the stream and waits for its first chunk with substance (see openStream); after that nothing is retried. */
  stream(route: Route, call: ProviderCall): Promise<StreamStart> {
    return this.run(route, call, true) as Promise<StreamStart>;
  }

  async close(): Promise<void> {
    this.health.close();
    await this.providers.close();
  }

  private run(route: Route, call: ProviderCall, streaming: boolean): Promise<ChatCompletion | StreamStart> {
    const { body } = call;
    // Routing fields are ours; upstreams would reject them.
    if (body.models !== undefined) delete body.models;
    if (body.timeout_ms !== undefined) delete body.timeout_ms;
    return route.deadline ? this.withDeadline(route, call, streaming) : this.attempts(route, call, streaming);
  }

  private async withDeadline(route: Route, call: ProviderCall, streaming: boolean): Promise<ChatCompletion | StreamStart> {
    // The request's `timeout_ms`: a timer (undici's own timeouts tick by the second) that aborts the attempts, not
    // the client's signal, and is cleared once the answer starts. Client aborts are forwarded.
    const client = call.signal;
    const controller = new AbortController();
    const forward = () => controller.abort(client.reason);
    client.addEventListener('abort', forward, { once: true });
    const timer = setTimeout(() => controller.abort(new Error('timeout_ms ran out')), Math.max(0, route.deadline - Date.now()));
    call.signal = controller.signal;
    try {
      return await this.attempts(route, call, streaming);
    } catch (error) {
      if (client.aborted || !controller.signal.aborted) throw error;
      throw new UpstreamError(route.providerId, 'timeout', `no answer within the request's timeout_ms`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  private async attempts(route: Route, call: ProviderCall, streaming: boolean): Promise<ChatCompletion | StreamStart> {
    const { body } = call;
    const timeoutMs = call.timeoutMs;
    let lastError: unknown;
    let unrecorded: Deployment | undefined;
    for (const deployment of route.candidates) {
      if (!deployment.breaker.allows()) continue;
      for (let attempt = 0; ; attempt++) {
        if (route.deadline) {
          const remaining = route.deadline - Date.now();
          if (remaining <= 0) throw new UpstreamError(deployment.providerId, 'timeout', `no answer within the request's timeout_ms`);
          call.timeoutMs = Math.min(timeoutMs, remaining);
        }
        // A failed attempt followed by another counts for uptime here; the last one is the request's outcome.
        if (unrecorded) this.health.recordFailure(unrecorded);
        unrecorded = undefined;
        body.model = deployment.upstreamModel;
        call.defaultMaxTokens = deployment.model.maxTokens;
        try {
          const result = await withSpan<ChatCompletion | StreamStart>(
            `upstream ${deployment.providerId}`,
            { 'gen_ai.system': deployment.providerId, 'gen_ai.request.model': deployment.upstreamModel, 'tollgate.attempt': attempt + 1, 'tollgate.stream': streaming },
            () => (streaming ? openStream(deployment, call) : deployment.provider.complete(call)),
            SpanKind.CLIENT,
          );
          this.health.succeeded(deployment);
          route.model = deployment.model;
          route.providerId = deployment.providerId;
          return result;
        } catch (error) {
          if (call.signal.aborted) throw error;
          route.model = deployment.model;
          route.providerId = deployment.providerId;
          const next = verdict(error);
          if (next === 'stop') throw error;
          lastError = error;
          unrecorded = deployment;
          if (next === 'retry') this.health.failed(deployment, reasonOf(error));
          if (next !== 'retry' || attempt >= this.settings.retries || !deployment.breaker.allows()) break;
          await pause(backoffMs(attempt, this.settings.backoff_ms, this.settings.max_backoff_ms), call.signal);
        }
      }
    }
    throw lastError ?? new GatewayError('model_unavailable', { message: `The model '${route.model.id}' is unavailable: ${route.model.statusMessage}` });
  }

  private sandbox(model: CatalogModel): Deployment[] {
    let list = this.sandboxed.get(model.id);
    if (!list) {
      const upstreamModel = model.providerId === SANDBOX_PROVIDER_ID ? model.upstreamModel : 'echo';
      const breaker = new Breaker(Number.POSITIVE_INFINITY, 1);
      list = [{ model, providerId: SANDBOX_PROVIDER_ID, upstreamModel, weight: undefined, provider: this.providers.sandbox, breaker, probing: false }];
      this.sandboxed.set(model.id, list);
    }
    return list;
  }
}

/** The price to reserve when any of several models may answer: the dearest of each side. */
function dearest(models: readonly CatalogModel[]): Price {
  let { promptPer1k, completionPer1k } = models[0]!.price;
  for (const m of models) {
    if (m.price.promptPer1k > promptPer1k) promptPer1k = m.price.promptPer1k;
    if (m.price.completionPer1k > completionPer1k) completionPer1k = m.price.completionPer1k;
  }
  return { promptPer1k, completionPer1k };
}

/** Deployments in configuration order, except that with weights the first is drawn by weight. */
function ordered(list: readonly Deployment[]): readonly Deployment[] {
  const weighted = list.filter((d) => d.weight !== undefined && d.breaker.allows());
  if (weighted.length === 0) return list;
  let ticket = Math.random() * weighted.reduce((sum, d) => sum + d.weight!, 0);
  const chosen = weighted.find((d) => (ticket -= d.weight!) < 0) ?? weighted[weighted.length - 1]!;
  return [chosen, ...list.filter((d) => d !== chosen)];
}
