/** The gateway's model catalog: resolved names, prices in nano-USD, status and filters. */
import {
  KNOWN_PROVIDERS,
  SANDBOX_PROVIDER_ID,
  type Capabilities,
  type Config,
  type ModelConfig,
  type PricingConfig,
} from '../config/index.js';
import { PriceRules } from '../pricing/index.js';
import { GatewayError } from '../errors/index.js';
import { displayNameOf } from './display-name.js';
import type { ModelFigures } from './live-figures.js';

export interface CatalogModel {
  id: string;
  /** A human name: the configured `name`, else one read from the id. */
  displayName: string;
  aliases: string[];
  providerId: string;
  providerName: string;
  upstreamModel: string;
  /** The prices in force at any moment (`pricing.at(admittedAt)`). */
  pricing: PriceRules;
  /** The prices as configured (USD per 1,000 tokens, fees per unit), shown in `GET /v1/models`. */
  pricingUsd: PricingConfig;
  contextLength: number;
  maxTokens: number;
  capabilities: Capabilities;
  created: number;
  /** Where the model is served, in routing order; the first is `providerId` / `upstreamModel` unless configured otherwise. */
  deployments: DeploymentRef[];
  /** At least one deployment's provider is configured. */
  configured: boolean;
  /** Live: configured and, when the router reports health, not every deployment's circuit open. */
  readonly active: boolean;
  readonly statusMessage: string;
}

export interface DeploymentRef {
  providerId: string;
  upstreamModel: string;
  weight: number | undefined;
  configured: boolean;
}

export interface ModelStatus {
  active: boolean;
  message: string;
}

/** The router's view of a model's deployments (circuit breakers). */
export interface HealthSource {
  status(model: CatalogModel): ModelStatus | undefined;
}

export interface ModelFilter {
  provider?: string;
  /** A capability key (chat, completion, image = vision, embedding = embeddings, or one of the six). */
  capability?: keyof Capabilities;
  activeOnly: boolean;
}

export const CAPABILITY_ALIASES: Record<string, keyof Capabilities> = {
  chat: 'chat',
  completion: 'completion',
  image: 'vision',
  embedding: 'embeddings',
  function_calling: 'function_calling',
  vision: 'vision',
  embeddings: 'embeddings',
  json_mode: 'json_mode',
};

export class Catalog {
  private readonly byName = new Map<string, CatalogModel>();
  private health: HealthSource | undefined;
  readonly models: CatalogModel[];

  constructor(config: Config) {
    const status = (model: CatalogModel, fallback: ModelStatus) =>
      (model.configured && this.health?.status(model)) || fallback;
    this.models = config.models
      .map((model) => toCatalogModel(model, config, status))
      .sort((a, b) => a.providerId.localeCompare(b.providerId) || a.id.localeCompare(b.id));
    for (const model of this.models) {
      for (const name of [model.id, ...model.aliases]) this.byName.set(name, model);
    }
  }

  /** Lets the router's circuit breakers decide `status` of configured models. */
  setHealth(source: HealthSource): void {
    this.health = source;
  }

  /** By id or alias; undefined when unknown. */
  find(name: string): CatalogModel | undefined {
    return this.byName.get(name);
  }

  resolve(name: string): CatalogModel {
    const model = this.byName.get(name);
    if (!model) {
      throw new GatewayError('model_not_found', { message: `The model '${name}' does not exist`, param: 'model' });
    }
    return model;
  }

  list(filter: ModelFilter): CatalogModel[] {
    return this.models.filter(
      (m) =>
        (!filter.activeOnly || m.active) &&
        (!filter.provider || m.providerId === filter.provider) &&
        (!filter.capability || m.capabilities[filter.capability]),
    );
  }
}

function isConfigured(providerId: string, config: Config): boolean {
  if (providerId === SANDBOX_PROVIDER_ID) return true;
  const known = KNOWN_PROVIDERS.find((p) => p.id === providerId);
  const settings = config.providers[providerId];
  // The contract: configured by its key, or by its base URL for keyless and custom (OpenAI-compatible) providers.
  return Boolean(settings?.api_key || ((!known || known.keyless) && settings?.base_url));
}

function toCatalogModel(
  model: ModelConfig,
  config: Config,
  status: (model: CatalogModel, fallback: ModelStatus) => ModelStatus,
): CatalogModel {
  const known = KNOWN_PROVIDERS.find((p) => p.id === model.provider);
  const settings = config.providers[model.provider];
  const sandbox = model.provider === SANDBOX_PROVIDER_ID;
  const providerName = settings?.name ?? known?.name ?? (sandbox ? 'Sandbox' : model.provider);
  const envHint = known
    ? known.keyless
      ? `${known.env}_BASE_URL`
      : `${known.env}_API_KEY`
    : `providers.${model.provider}`;
  const deployments: DeploymentRef[] = (
    model.deployments ?? [{ provider: model.provider, upstream_model: model.upstream_model }]
  ).map((d) => ({
    providerId: d.provider,
    upstreamModel: d.upstream_model ?? model.upstream_model ?? model.id,
    weight: 'weight' in d ? d.weight : undefined,
    configured: isConfigured(d.provider, config),
  }));
  const configured = deployments.some((d) => d.configured);
  const fixed: ModelStatus = configured
    ? { active: true, message: 'Available' }
    : { active: false, message: `Provider ${providerName} is not configured: set ${envHint}` };
  return {
    id: model.id,
    displayName: model.name ?? displayNameOf(model.id),
    aliases: model.aliases ?? [],
    providerId: model.provider,
    providerName,
    upstreamModel: model.upstream_model ?? model.id,
    pricing: new PriceRules(model.pricing),
    pricingUsd: model.pricing,
    contextLength: model.context_length,
    maxTokens: model.max_tokens,
    capabilities: model.capabilities,
    created: model.created,
    deployments,
    configured,
    get active() {
      return status(this, fixed).active;
    },
    get statusMessage() {
      return status(this, fixed).message;
    },
  };
}

/** The public model object of spec 2.3 (plus modalities and supported_parameters when asked). */
export function renderModel(
  model: CatalogModel,
  performance: ModelFigures,
  detailed: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    id: model.id,
    object: 'model',
    created: model.created,
    owned_by: model.providerId,
    provider: { id: model.providerId, name: model.providerName },
    pricing: { ...model.pricingUsd, unit: '1k_tokens' },
    context_length: model.contextLength,
    max_tokens: model.maxTokens,
    capabilities: { ...model.capabilities },
    performance,
    status: { active: model.active, message: model.statusMessage },
  };
  if (model.aliases.length) body.aliases = model.aliases;
  if (detailed) {
    body.modalities = { input: model.capabilities.vision ? ['text', 'image'] : ['text'], output: ['text'] };
    body.supported_parameters = supportedParameters(model.capabilities);
  }
  return body;
}

function supportedParameters(capabilities: Capabilities): string[] {
  const params = [
    'messages',
    'model',
    'max_tokens',
    'max_completion_tokens',
    'temperature',
    'top_p',
    'n',
    'stop',
    'stream',
    'stream_options',
    'seed',
    'user',
    'presence_penalty',
    'frequency_penalty',
    'logit_bias',
    'logprobs',
    'top_logprobs',
  ];
  if (capabilities.function_calling) params.push('tools', 'tool_choice', 'parallel_tool_calls');
  if (capabilities.json_mode) params.push('response_format');
  return params;
}
