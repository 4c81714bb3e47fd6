/**
 * `tollgate models check`: asks each configured provider for the models it serves and compares them with the
 * catalog's deployments there (their upstream model names). A catalog model the provider does not serve would fail
 * every request; a served model the catalog lacks is only news. Exits 1 when a catalog model is not served, 2 when
 * none is missing but a provider could not be asked.
 */
import { request } from 'undici';
import { KNOWN_PROVIDERS, loadConfig, SANDBOX_PROVIDER_ID, type Config, type ProviderApi } from '../config/index.js';
import { messageOf } from '../errors/index.js';
import { isObject } from '../wire/index.js';
import { print, printJson, printTable, type JsonOption } from './output.js';

const LIST_TIMEOUT_MS = 10_000;
/** Pages read at most per provider: a server that keeps saying "more" is not followed for ever. */
const MAX_PAGES = 50;
const ANTHROPIC_VERSION = '2023-06-01';

/** A catalog upstream model the provider does not list, with the catalog models that use it. */
export interface NotServed {
  upstream_model: string;
  models: string[];
}

export interface ProviderReport {
  provider: string;
  api: ProviderApi;
  base_url: string;
  /** `ok`: listed and compared; `error`: the list could not be read; `skipped`: not configured enough to ask. */
  status: 'ok' | 'error' | 'skipped';
  detail?: string;
  /** Distinct upstream model names the catalog sends to this provider. */
  catalog: number;
  /** Models the provider lists (undefined when it was not asked or did not answer). */
  served?: number;
  not_served: NotServed[];
  not_in_catalog: string[];
}

export interface ModelsCheckReport {
  ok: boolean;
  providers: ProviderReport[];
}

export async function checkModels(options: JsonOption): Promise<void> {
  const report = await modelsCheck(loadConfig());
  if (options.json) printJson(report);
  else printReport(report);
  if (report.providers.some((p) => p.not_served.length)) process.exitCode = 1;
  else if (report.providers.some((p) => p.status === 'error')) process.exitCode = 2;
}

/** The comparison for every provider the configuration names (the sandbox aside), in configuration order. */
export async function modelsCheck(config: Config): Promise<ModelsCheckReport> {
  const wanted = upstreamModels(config);
  const providers = await Promise.all(
    Object.entries(config.providers)
      .filter(([id]) => id !== SANDBOX_PROVIDER_ID)
      .map(([id]) => checkProvider(config, id, wanted.get(id) ?? new Map<string, string[]>())),
  );
  const ok = providers.every((p) => p.status !== 'error' && p.not_served.length === 0);
  return { ok, providers };
}

/** Per provider: each upstream model name the catalog sends there, with the catalog ids (sorted) that send it. */
function upstreamModels(config: Config): Map<string, Map<string, string[]>> {
  const byProvider = new Map<string, Map<string, string[]>>();
  for (const model of config.models) {
    const deployments = model.deployments ?? [{ provider: model.provider, upstream_model: model.upstream_model }];
    for (const deployment of deployments) {
      const upstream = deployment.upstream_model ?? model.upstream_model ?? model.id;
      const names = byProvider.get(deployment.provider) ?? new Map<string, string[]>();
      byProvider.set(deployment.provider, names);
      const ids = names.get(upstream) ?? [];
      if (!ids.includes(model.id)) ids.push(model.id);
      names.set(upstream, ids.sort());
    }
  }
  return byProvider;
}

async function checkProvider(config: Config, id: string, wanted: Map<string, string[]>): Promise<ProviderReport> {
  const settings = config.providers[id] ?? {};
  const known = KNOWN_PROVIDERS.find((p) => p.id === id);
  const api: ProviderApi = settings.api ?? known?.api ?? 'openai';
  const baseUrl = settings.base_url ?? known?.defaultBaseUrl ?? '';
  const report: ProviderReport = {
    provider: id,
    api,
    base_url: baseUrl,
    status: 'ok',
    catalog: wanted.size,
    not_served: [],
    not_in_catalog: [],
  };
  // The gateway's own rule: a known provider that needs a key is inactive without one, so its list is not asked.
  if (known && !known.keyless && !settings.api_key) {
    return { ...report, status: 'skipped', detail: `${known.env}_API_KEY is not set: its models are inactive` };
  }
  let served: Set<string>;
  try {
    served = new Set(await listModels(api, baseUrl, settings.api_key));
  } catch (error) {
    return { ...report, status: 'error', detail: listProblem(error, known?.env) };
  }
  report.served = served.size;
  for (const [upstream, models] of [...wanted].sort(([a], [b]) => a.localeCompare(b))) {
    if (!served.has(upstream)) report.not_served.push({ upstream_model: upstream, models });
  }
  report.not_in_catalog = [...served].filter((name) => !wanted.has(name)).sort((a, b) => a.localeCompare(b));
  return report;
}

/** A provider's answer other than 2xx, kept apart so that the message can name the status. */
class ListError extends Error {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super(`HTTP ${status}${body ? `: ${body.slice(0, 200)}` : ''}`);
  }
}

/** The model names the provider serves, every page read, in its own format. */
function listModels(api: ProviderApi, baseUrl: string, apiKey: string | undefined): Promise<string[]> {
  if (api === 'anthropic') return listAnthropic(baseUrl, apiKey);
  if (api === 'gemini') return listGemini(baseUrl, apiKey);
  return listOpenAI(baseUrl, apiKey);
}

/** OpenAI-compatible: `GET {base}/models` with a Bearer key, `{data: [{id}]}` in one page. */
async function listOpenAI(baseUrl: string, apiKey: string | undefined): Promise<string[]> {
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const body = await getJson(endpoint(baseUrl, '/models'), headers);
  return namesOf(body, 'data', 'id');
}

/** Anthropic: `GET {base}/models` (the base ends in /v1) with `x-api-key`, paged by `has_more` / `last_id`. */
async function listAnthropic(baseUrl: string, apiKey: string | undefined): Promise<string[]> {
  const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION };
  if (apiKey) headers['x-api-key'] = apiKey;
  const names: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = endpoint(baseUrl, '/models', { limit: '1000', ...(after ? { after_id: after } : {}) });
    const body = await getJson(url, headers);
    names.push(...namesOf(body, 'data', 'id'));
    const lastId = isObject(body) && typeof body.last_id === 'string' ? body.last_id : undefined;
    if (!isObject(body) || body.has_more !== true || !lastId || lastId === after) break;
    after = lastId;
  }
  return names;
}

/**
 * Gemini: `GET {base}/models` (the base ends in /v1beta) paged by `nextPageToken`; names are `models/x`. The key
 * goes in `x-goog-api-key`, as the adapter sends it, rather than `?key=`, so that no URL carries it.
 */
async function listGemini(baseUrl: string, apiKey: string | undefined): Promise<string[]> {
  const headers: Record<string, string> = apiKey ? { 'x-goog-api-key': apiKey } : {};
  const names: string[] = [];
  let token: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = endpoint(baseUrl, '/models', { pageSize: '1000', ...(token ? { pageToken: token } : {}) });
    const body = await getJson(url, headers);
    names.push(...namesOf(body, 'models', 'name').map((name) => name.replace(/^models\//, '')));
    const next = isObject(body) && typeof body.nextPageToken === 'string' ? body.nextPageToken : undefined;
    if (!next || next === token) break;
    token = next;
  }
  return names;
}

/** `{base}{path}`, keeping the base's own query (Azure's `api-version`) and adding `query`. */
function endpoint(baseUrl: string, path: string, query: Record<string, string> = {}): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.toString();
}

async function getJson(url: string, headers: Record<string, string>): Promise<unknown> {
  const res = await request(url, {
    method: 'GET',
    headers: { accept: 'application/json', ...headers },
    signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
    headersTimeout: LIST_TIMEOUT_MS,
    bodyTimeout: LIST_TIMEOUT_MS,
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new ListError(res.statusCode, text.trim());
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`the model list is not JSON: ${text.slice(0, 200)}`);
  }
}

/** The string `field` of every object in the array `list` of `body`. */
function namesOf(body: unknown, list: string, field: string): string[] {
  const items = isObject(body) ? body[list] : undefined;
  if (!Array.isArray(items)) throw new Error(`the model list has no "${list}" array`);
  return items.flatMap((item) => {
    const name = isObject(item) ? item[field] : undefined;
    return typeof name === 'string' ? [name] : [];
  });
}

function listProblem(error: unknown, env: string | undefined): string {
  const keyVar = env ? `${env}_API_KEY` : 'its api_key';
  if (error instanceof ListError) {
    if (error.status === 401 || error.status === 403)
      return `the key was refused (HTTP ${error.status}): check ${keyVar}`;
    if (error.status === 404)
      return 'no model list at this address (HTTP 404): check the base URL, which usually ends in /v1';
    return `answered ${error.message}`;
  }
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return `no answer within ${LIST_TIMEOUT_MS / 1000} s`;
  return `could not list its models: ${messageOf(error)}`;
}

/** How many names `printReport` shows in one list before "and N more". */
const SHOWN = 30;

function printReport(report: ModelsCheckReport): void {
  if (!report.providers.length) {
    return print('No provider is configured (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...): nothing to check.');
  }
  printTable(
    ['PROVIDER', 'BASE URL', 'RESULT', 'CATALOG', 'SERVED', 'NOT SERVED', 'NOT IN CATALOG'],
    report.providers.map((p) => [
      p.provider,
      p.base_url,
      p.status === 'ok' ? (p.not_served.length ? 'MISSING' : 'ok') : p.status.toUpperCase(),
      String(p.catalog),
      p.served === undefined ? '-' : String(p.served),
      p.status === 'ok' ? String(p.not_served.length) : '-',
      p.status === 'ok' ? String(p.not_in_catalog.length) : '-',
    ]),
  );
  for (const p of report.providers) {
    const lines: string[] = [];
    if (p.detail) lines.push(`  ${p.detail}`);
    if (p.not_served.length) {
      lines.push('  catalog models it does not serve (requests for them would fail):');
      for (const missing of p.not_served) {
        const users = missing.models.join(', ');
        lines.push(`    ${missing.upstream_model}${users === missing.upstream_model ? '' : `  (catalog: ${users})`}`);
      }
    }
    if (p.not_in_catalog.length) {
      const shown = p.not_in_catalog.slice(0, SHOWN).join(', ');
      const more = p.not_in_catalog.length - SHOWN;
      lines.push(`  served but not in the catalog: ${shown}${more > 0 ? `, and ${more} more (--json lists all)` : ''}`);
    }
    if (lines.length) print('', `${p.provider}:`, ...lines);
  }
  const missing = report.providers.reduce((n, p) => n + p.not_served.length, 0);
  const failed = report.providers.filter((p) => p.status === 'error').length;
  print(
    '',
    missing
      ? `${missing} catalog model(s) not served: fix their upstream_model or deployments, or remove them.`
      : failed
        ? `No catalog model was found missing, but ${failed} provider(s) could not be asked.`
        : 'Every catalog model is served by its provider.',
  );
}
