/**
 * Chooses who answers a request. Today: the model's one provider, or the sandbox for test keys. Deployments,
 * retries, fallbacks and circuit breakers (the providers-and-routing issue) grow here behind `route`.
 */
import type { CatalogModel } from '../catalog/index.js';
import { KNOWN_PROVIDERS, SANDBOX_PROVIDER_ID, type Config } from '../config/index.js';
import { GatewayError } from '../errors/index.js';
import { createOpenAICompatibleProvider, type OpenAICompatibleProvider } from '../providers/openai-compatible/index.js';
import { createSandboxProvider } from '../providers/sandbox/index.js';
import type { Provider } from '../providers/types.js';
import type { Environment } from '../storage/index.js';

export interface Route {
  provider: Provider;
  upstreamModel: string;
}

export class Router {
  private readonly providers = new Map<string, Provider>();
  private readonly closers: OpenAICompatibleProvider[] = [];
  private readonly sandbox = createSandboxProvider();

  constructor(config: Config) {
    this.providers.set(SANDBOX_PROVIDER_ID, this.sandbox);
    const ids = new Set([...KNOWN_PROVIDERS.map((p) => p.id), ...Object.keys(config.providers)]);
    for (const id of ids) {
      if (id === SANDBOX_PROVIDER_ID) continue;
      const known = KNOWN_PROVIDERS.find((p) => p.id === id);
      const settings = config.providers[id];
      const baseUrl = settings?.base_url ?? known?.defaultBaseUrl;
      if (!baseUrl) continue;
      const provider = createOpenAICompatibleProvider({ id, baseUrl, ...(settings?.api_key ? { apiKey: settings.api_key } : {}) });
      this.providers.set(id, provider);
      this.closers.push(provider);
    }
  }

  route(model: CatalogModel, environment: Environment): Route {
    if (environment === 'test') {
      return { provider: this.sandbox, upstreamModel: model.providerId === SANDBOX_PROVIDER_ID ? model.upstreamModel : 'echo' };
    }
    if (!model.active) throw new GatewayError('model_unavailable', { message: `The model '${model.id}' is unavailable: ${model.statusMessage}` });
    const provider = this.providers.get(model.providerId);
    if (!provider) throw new GatewayError('model_unavailable', { message: `No provider can serve '${model.id}'` });
    return { provider, upstreamModel: model.upstreamModel };
  }

  async close(): Promise<void> {
    await Promise.all(this.closers.map((p) => p.close()));
  }
}
