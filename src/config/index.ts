/**
 * Configuration: built-in defaults, then the optional YAML file (`TOLLGATE_CONFIG`, else ./tollgate.config.yaml
 * when present), then environment variables. The merged result is validated once; an invalid field stops
 * start-up with a message naming it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { messageOf } from '../errors/index.js';
import { isExactUsd } from '../money/index.js';
import { DEFAULT_MODELS, SANDBOX_MODELS } from './default-catalog.js';
import { KNOWN_PROVIDERS, type ProviderApi } from './providers.js';
import { ConfigSchema, type Config, type ModelConfig } from './schema.js';
import { SubstitutionError, substituteEnvInObject } from './substitute.js';

export type {
  Config,
  ModelConfig,
  PlanConfig,
  Capabilities,
  PricingConfig,
  ProviderSettings,
  DeploymentConfig,
  RoutingConfig,
} from './schema.js';
export {
  KNOWN_PROVIDERS,
  PROVIDER_APIS,
  SANDBOX_PROVIDER_ID,
  type KnownProvider,
  type ProviderApi,
} from './providers.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function defaultConfig(): Config {
  return {
    server: {
      port: 8080,
      host: '0.0.0.0',
      body_limit_bytes: 4 * 1024 * 1024,
      upstream_timeout_ms: 60_000,
      request_timeout_ms: 30_000,
      cors_origins: [],
      trust_proxy: false,
      admin_auth_max_failures: 10,
      public_hosts: [],
    },
    storage: { data_dir: './data' },
    key_prefix: 'tg',
    redis_prefix: 'tg:',
    workers: 1,
    log_level: 'info',
    metrics_public: false,
    credits: {
      signup_grant: 5,
      low_balance_thresholds: [1],
      wait_for_holds_ms: 10_000,
      waiters_per_account: 8,
      auto_recharge: { max_amount: 1000, max_per_day: 3 },
    },
    default_plan: 'free',
    plans: {
      free: { requests_per_minute: 60, tokens_per_minute: 100_000, daily_limit: 5 },
      pay_as_you_go: { requests_per_minute: 600, tokens_per_minute: 2_000_000 },
      enterprise: { requests_per_minute: 6_000, tokens_per_minute: 20_000_000 },
    },
    providers: {},
    default_models: true,
    models: [],
    routing: { retries: 1, backoff_ms: 200, max_backoff_ms: 2_000, breaker_failures: 5, breaker_cooldown_ms: 30_000 },
    dashboard: { enabled: true, signup: true, session_ttl_hours: 168, signin_attempts_per_minute: 10 },
    signup: { grant_without_verification: true, per_ip_per_hour: 20, verification_ttl_hours: 24 },
    smtp: { from: 'tollgate <noreply@localhost>' },
    payments: {
      stripe: {},
      purchase: {
        min_amount: 5,
        max_amount: 1000,
        pending_check_after_seconds: 300,
        pending_check_interval_seconds: 60,
      },
    },
    webhooks: {
      allow_private_urls: false,
      poll_interval_ms: 500,
      concurrency: 16,
      max_in_flight_per_endpoint: 4,
      max_in_flight_per_account: 8,
      refresh_ms: 2_000,
      max_buffered: 10_000,
    },
  };
}

type Env = Record<string, string | undefined>;

/** Any part of a value, at any depth; arrays are given whole (merging replaces them). */
type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

/** Settings to merge over the configuration, at any depth: the result is validated as a whole. */
export type ConfigOverrides = DeepPartial<Config>;

export interface LoadOptions {
  env?: Env;
  /** Explicit file path; otherwise TOLLGATE_CONFIG, otherwise ./tollgate.config.yaml if it exists. */
  file?: string;
  /** Programmatic overrides applied last (tests). */
  overrides?: ConfigOverrides;
}

export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  let merged: Record<string, unknown> = defaultConfig();
  const file =
    options.file ?? env.TOLLGATE_CONFIG ?? (existsSync('tollgate.config.yaml') ? 'tollgate.config.yaml' : undefined);
  if (file) merged = deepMerge(merged, withEnv(readYaml(file), env));
  merged = deepMerge(merged, fromEnv(env));
  if (options.overrides) merged = deepMerge(merged, options.overrides);
  const config = validate(merged);
  config.models = catalogModels(config);
  checkConsistency(config);
  return config;
}

function readYaml(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(resolve(file), 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read configuration file ${file}: ${messageOf(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    throw new ConfigError(`Configuration file ${file} is not valid YAML: ${messageOf(error)}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isMapping(parsed)) throw new ConfigError(`Configuration file ${file} must hold a mapping at its top level`);
  return parsed;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function withEnv(fileConfig: Record<string, unknown>, env: Env): Record<string, unknown> {
  try {
    return substituteEnvInObject(fileConfig, env);
  } catch (error) {
    if (error instanceof SubstitutionError) throw new ConfigError(`Invalid configuration: ${error.message}`);
    throw error;
  }
}

function fromEnv(env: Env): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const server: Record<string, unknown> = {};
  if (env.PORT !== undefined) server.port = envInteger('PORT', env.PORT);
  if (env.HOST) server.host = env.HOST;
  if (env.TOLLGATE_PUBLIC_URL) server.public_url = env.TOLLGATE_PUBLIC_URL;
  if (env.TOLLGATE_PUBLIC_HOSTS !== undefined)
    server.public_hosts = env.TOLLGATE_PUBLIC_HOSTS.split(',')
      .map((host) => host.trim())
      .filter((host) => host !== '');
  if (Object.keys(server).length) out.server = server;
  const storage: Record<string, unknown> = {};
  if (env.TOLLGATE_DATA_DIR) storage.data_dir = env.TOLLGATE_DATA_DIR;
  if (env.DATABASE_URL) storage.database_url = env.DATABASE_URL;
  if (Object.keys(storage).length) out.storage = storage;
  if (env.REDIS_URL) out.redis_url = env.REDIS_URL;
  if (env.TOLLGATE_REDIS_PREFIX) out.redis_prefix = env.TOLLGATE_REDIS_PREFIX;
  if (env.TOLLGATE_ADMIN_TOKEN) out.admin_token = env.TOLLGATE_ADMIN_TOKEN;
  if (env.TOLLGATE_KEY_SECRET) out.key_secret = env.TOLLGATE_KEY_SECRET;
  const smtp: Record<string, string> = {};
  if (env.SMTP_URL) smtp.url = env.SMTP_URL;
  if (env.SMTP_FROM) smtp.from = env.SMTP_FROM;
  if (Object.keys(smtp).length) out.smtp = smtp;
  const stripe: Record<string, string> = {};
  if (env.STRIPE_SECRET_KEY) stripe.secret_key = env.STRIPE_SECRET_KEY;
  if (env.STRIPE_WEBHOOK_SECRET) stripe.webhook_secret = env.STRIPE_WEBHOOK_SECRET;
  if (env.STRIPE_API_BASE) stripe.api_base = env.STRIPE_API_BASE;
  if (Object.keys(stripe).length) out.payments = { stripe };
  if (env.TOLLGATE_LOG_LEVEL) out.log_level = env.TOLLGATE_LOG_LEVEL;
  if (env.TOLLGATE_WORKERS !== undefined) out.workers = envInteger('TOLLGATE_WORKERS', env.TOLLGATE_WORKERS);
  const providers: Record<string, Record<string, string>> = {};
  for (const known of KNOWN_PROVIDERS) {
    const apiKey = env[`${known.env}_API_KEY`];
    const baseUrl = env[`${known.env}_BASE_URL`];
    if (apiKey || baseUrl) {
      providers[known.id] = {};
      if (apiKey) providers[known.id]!.api_key = apiKey;
      if (baseUrl) providers[known.id]!.base_url = baseUrl;
    }
  }
  if (Object.keys(providers).length) out.providers = providers;
  return out;
}

function envInteger(name: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) {
    throw new ConfigError(`Invalid configuration: ${name} must be a whole number, got "${value}"`);
  }
  return n;
}

function validate(candidate: Record<string, unknown>): Config {
  if (Value.Check(ConfigSchema, candidate)) return candidate;
  const first = Value.Errors(ConfigSchema, candidate).First();
  const path = first?.path.replace(/^\//, '').replaceAll('/', '.') || '(root)';
  const shown = first?.value === undefined ? 'missing' : JSON.stringify(first.value);
  throw new ConfigError(`Invalid configuration: ${path}: ${first?.message} (got ${shown})`);
}

/** The catalog: sandbox models, the built-in catalog unless `default_models: false`, then the file's models by id. */
function catalogModels(config: Config): ModelConfig[] {
  const byId = new Map<string, ModelConfig>();
  for (const model of SANDBOX_MODELS) byId.set(model.id, model);
  if (config.default_models) for (const model of DEFAULT_MODELS) byId.set(model.id, model);
  for (const model of config.models) byId.set(model.id, model);
  return [...byId.values()];
}

function checkConsistency(config: Config): void {
  if (config.workers > 1 && !(config.storage.database_url && config.redis_url)) {
    throw new ConfigError(
      'Invalid configuration: workers: more than one worker needs DATABASE_URL and REDIS_URL (credit holds and rate limits must be shared)',
    );
  }
  if (!config.plans[config.default_plan]) {
    throw new ConfigError(`Invalid configuration: default_plan: no plan named "${config.default_plan}" in plans`);
  }
  for (const [name, plan] of Object.entries(config.plans)) {
    if (plan.daily_limit != null && !isExactUsd(plan.daily_limit)) {
      throw new ConfigError(`Invalid configuration: plans.${name}.daily_limit: more than 9 decimals`);
    }
  }
  if (!isExactUsd(config.credits.auto_recharge.max_amount)) {
    throw new ConfigError('Invalid configuration: credits.auto_recharge.max_amount: more than 9 decimals');
  }
  const { min_amount, max_amount } = config.payments.purchase;
  for (const [name, value] of Object.entries({ min_amount, max_amount })) {
    if (Math.round(value * 100) / 100 !== value)
      throw new ConfigError(`Invalid configuration: payments.purchase.${name}: whole cents only`);
  }
  if (min_amount > max_amount)
    throw new ConfigError('Invalid configuration: payments.purchase.min_amount: larger than max_amount');
  const knownIds = new Set([...KNOWN_PROVIDERS.map((p) => p.id), 'sandbox']);
  for (const [id, settings] of Object.entries(config.providers)) {
    if (!knownIds.has(id) && !settings.base_url) {
      throw new ConfigError(
        `Invalid configuration: providers.${id}.base_url: required for a provider tollgate does not know`,
      );
    }
  }
  const names = new Map<string, string>();
  config.models.forEach((model, index) => {
    const where = `models[${index}] (${model.id})`;
    if (!knownIds.has(model.provider) && !config.providers[model.provider]) {
      throw new ConfigError(`Invalid configuration: ${where}.provider: unknown provider "${model.provider}"`);
    }
    model.deployments?.forEach((deployment, i) => {
      if (!knownIds.has(deployment.provider) && !config.providers[deployment.provider]) {
        throw new ConfigError(
          `Invalid configuration: ${where}.deployments[${i}].provider: unknown provider "${deployment.provider}"`,
        );
      }
    });
    checkPricing(model.pricing, `${where}.pricing`);
    if (model.max_tokens > model.context_length) {
      throw new ConfigError(`Invalid configuration: ${where}.max_tokens: larger than context_length`);
    }
    if (model.max_tokens === 0 && (model.capabilities.chat || model.capabilities.completion)) {
      throw new ConfigError(`Invalid configuration: ${where}.max_tokens: 0 for a model that generates text`);
    }
    const providers = model.deployments?.map((d) => d.provider) ?? [model.provider];
    if (model.capabilities.embeddings) {
      const anthropic = providers.find((id) => apiOf(config, id) === 'anthropic');
      if (anthropic)
        throw new ConfigError(
          `Invalid configuration: ${where}.capabilities.embeddings: provider "${anthropic}" does not create embeddings`,
        );
    }
    if (model.capabilities.completion) {
      // Text completions are OpenAI's protocol: only OpenAI-compatible servers (and the sandbox) serve them.
      const other = providers.find((id) => apiOf(config, id) === 'anthropic' || apiOf(config, id) === 'gemini');
      if (other)
        throw new ConfigError(
          `Invalid configuration: ${where}.capabilities.completion: provider "${other}" does not serve text completions`,
        );
    }
    for (const name of [model.id, ...(model.aliases ?? [])]) {
      const owner = names.get(name);
      if (owner && owner !== model.id) {
        throw new ConfigError(`Invalid configuration: ${where}.aliases: "${name}" already names ${owner}`);
      }
      names.set(name, model.id);
    }
  });
}

/** Every price of a model's pricing is exact to the nano-USD, and every change's date is a real one. */
function checkPricing(value: unknown, where: string): void {
  if (typeof value === 'number' && !where.endsWith('.above_prompt_tokens') && !isExactUsd(value))
    throw new ConfigError(`Invalid configuration: ${where}: more than 9 decimals`);
  if (typeof value === 'string' && where.endsWith('.effective_from') && Number.isNaN(Date.parse(value)))
    throw new ConfigError(`Invalid configuration: ${where}: not a date`);
  if (Array.isArray(value)) value.forEach((item, i) => checkPricing(item, `${where}[${i}]`));
  else if (typeof value === 'object' && value !== null)
    for (const [key, item] of Object.entries(value)) checkPricing(item, `${where}.${key}`);
}

/** The wire format a provider speaks: its own for known providers, else the configured `api` (default OpenAI's). */
function apiOf(config: Config, id: string): ProviderApi | 'sandbox' {
  if (id === 'sandbox') return 'sandbox';
  return config.providers[id]?.api ?? KNOWN_PROVIDERS.find((p) => p.id === id)?.api ?? 'openai';
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
export { VERSION } from './version.js';
export { CapabilitiesSchema, PricingSchema } from './schema.js';
export { publicBase, publicBaseMissing, type RequestAddress } from './public-url.js';
