/**
 * The deployments of every model with their circuit breakers: what `status` of GET /v1/models shows, and the
 * health probes that bring an open circuit back (a timer exists only while a circuit is open).
 */
import type { CatalogModel, HealthSource, ModelStatus, LiveFigures } from '../catalog/index.js';
import type { RoutingConfig } from '../config/index.js';
import { messageOf } from '../errors/index.js';
import { redactForClient, type Provider, type ProviderSet } from '../providers/index.js';
import { Breaker } from './breaker.js';

export interface Deployment {
  model: CatalogModel;
  providerId: string;
  upstreamModel: string;
  weight: number | undefined;
  provider: Provider;
  breaker: Breaker;
  /** A probe is scheduled or running. */
  probing: boolean;
}

const PROBE_TIMEOUT_MS = 10_000;

export class Health implements HealthSource {
  private readonly byModel = new Map<string, Deployment[]>();
  private readonly weights = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    models: readonly CatalogModel[],
    providers: ProviderSet,
    private readonly settings: RoutingConfig,
    private readonly performance: LiveFigures | undefined,
  ) {
    for (const model of models) {
      const list: Deployment[] = [];
      for (const ref of model.deployments) {
        const provider = ref.configured ? providers.get(ref.providerId) : undefined;
        if (!provider) continue;
        const breaker = new Breaker(settings.breaker_failures, settings.breaker_cooldown_ms);
        list.push({
          model,
          providerId: ref.providerId,
          upstreamModel: ref.upstreamModel,
          weight: ref.weight,
          provider,
          breaker,
          probing: false,
        });
      }
      this.byModel.set(model.id, list);
      if (list.some((d) => d.weight !== undefined)) this.weights.add(model.id);
    }
  }

  /** Whether the first deployment of a model is drawn by weight. */
  weighted(model: CatalogModel): boolean {
    return this.weights.has(model.id);
  }

  /** The configured deployments of a model, in configuration order. */
  deployments(model: CatalogModel): readonly Deployment[] {
    return this.byModel.get(model.id) ?? [];
  }

  status(model: CatalogModel): ModelStatus | undefined {
    const list = this.byModel.get(model.id);
    if (!list?.length) return undefined;
    const now = Date.now();
    const open = list.filter((d) => d.breaker.state(now) === 'open');
    if (open.length === 0) return undefined;
    const reasons = open.map((d) => `${d.providerId}: ${d.breaker.reason}`).join('; ');
    if (open.length < list.length) return { active: true, message: `Available (degraded: ${reasons})` };
    const seconds = Math.ceil(Math.min(...open.map((d) => d.breaker.remainingMs(now))) / 1000);
    return {
      active: false,
      message: `Unavailable: every provider of this model is failing (${reasons}); retrying in ${seconds}s`,
    };
  }

  succeeded(deployment: Deployment): void {
    deployment.breaker.success();
  }

  /** An upstream fault of one attempt: counts towards opening the deployment's circuit. */
  failed(deployment: Deployment, reason: string): void {
    if (deployment.breaker.failure(reason)) this.scheduleProbe(deployment);
  }

  /** A failed attempt that the request went on from, for uptime (a request's own outcome is recorded by the gateway). */
  recordFailure(deployment: Deployment): void {
    if (deployment.providerId !== 'sandbox') this.performance?.recordUptime(deployment.model.id, false);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private scheduleProbe(deployment: Deployment): void {
    const { provider } = deployment;
    if (!provider.probe || deployment.probing || this.closed) return;
    deployment.probing = true;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.probe(deployment, provider.probe!.bind(provider));
    }, this.settings.breaker_cooldown_ms);
    timer.unref();
    this.timers.add(timer);
  }

  private async probe(deployment: Deployment, probe: (signal: AbortSignal) => Promise<void>): Promise<void> {
    let ok = true;
    let reason = '';
    try {
      await probe(AbortSignal.timeout(PROBE_TIMEOUT_MS));
    } catch (error) {
      ok = false;
      reason = `health probe failed: ${redactForClient(messageOf(error))}`;
    }
    deployment.probing = false;
    if (this.closed) return;
    this.performance?.recordUptime(deployment.model.id, ok);
    if (ok) deployment.breaker.success();
    else if (deployment.breaker.state() !== 'closed') this.failed(deployment, reason);
  }
}
