/** One adapter instance per configured provider id, chosen by the provider's wire format. */
import { KNOWN_PROVIDERS, SANDBOX_PROVIDER_ID, type Config, type ProviderApi } from '../config/index.js';
import { createAnthropicProvider } from './anthropic/index.js';
import { createGeminiProvider } from './gemini/index.js';
import { createOpenAICompatibleProvider } from './openai-compatible/index.js';
import type { Provider } from './provider.js';
import { createSandboxProvider } from './sandbox/index.js';

type Closable = Provider & { close(): Promise<void> };

/** The adapter for each wire format: a new format is one folder and one line here. */
const FACTORIES: Record<ProviderApi, (options: { id: string; baseUrl: string; apiKey?: string }) => Closable> = {
  openai: createOpenAICompatibleProvider,
  anthropic: createAnthropicProvider,
  gemini: createGeminiProvider,
};

export class ProviderSet {
  private readonly providers = new Map<string, Provider>();
  private readonly closers: Closable[] = [];
  readonly sandbox = createSandboxProvider();

  constructor(config: Config) {
    this.providers.set(SANDBOX_PROVIDER_ID, this.sandbox);
    const ids = new Set([...KNOWN_PROVIDERS.map((p) => p.id), ...Object.keys(config.providers)]);
    for (const id of ids) {
      if (id === SANDBOX_PROVIDER_ID) continue;
      const known = KNOWN_PROVIDERS.find((p) => p.id === id);
      const settings = config.providers[id];
      const baseUrl = settings?.base_url ?? known?.defaultBaseUrl;
      if (!baseUrl) continue;
      const api = settings?.api ?? known?.api ?? 'openai';
      const adapter = FACTORIES[api]({ id, baseUrl, ...(settings?.api_key ? { apiKey: settings.api_key } : {}) });
      this.providers.set(id, adapter);
      this.closers.push(adapter);
    }
  }

  get(id: string): Provider | undefined {
    return this.providers.get(id);
  }

  async close(): Promise<void> {
    await Promise.all(this.closers.map((p) => p.close()));
  }
}
