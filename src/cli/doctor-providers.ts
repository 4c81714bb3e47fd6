/** `tollgate doctor`'s provider checks: each configured provider probed for reachability and its key. */
import { KNOWN_PROVIDERS, type Config, type ProviderSettings } from '../config/index.js';
import { messageOf } from '../errors/index.js';
import { ProviderSet, UpstreamError } from '../providers/index.js';
import type { Check } from './doctor-check.js';

const PROBE_TIMEOUT_MS = 10_000;

export async function probeProviders(config: Config): Promise<Check[]> {
  const providers = new ProviderSet(config);
  try {
    return await Promise.all(
      Object.entries(config.providers).map(([id, settings]) => providerCheck(providers, id, settings)),
    );
  } finally {
    await providers.close();
  }
}

async function providerCheck(providers: ProviderSet, id: string, settings: ProviderSettings): Promise<Check> {
  const check = `provider ${id}`;
  const known = KNOWN_PROVIDERS.find((p) => p.id === id);
  const baseUrl = settings.base_url ?? known?.defaultBaseUrl;
  if (known && !known.keyless && !settings.api_key) {
    return {
      check,
      outcome: 'warn',
      detail: `${known.env}_BASE_URL is set but ${known.env}_API_KEY is not: its models stay inactive`,
    };
  }
  const provider = providers.get(id);
  if (!provider?.probe) return { check, outcome: 'skip', detail: `${baseUrl}: this adapter has no health check` };
  const started = Date.now();
  try {
    await provider.probe(AbortSignal.timeout(PROBE_TIMEOUT_MS));
    return { check, outcome: 'ok', detail: `${baseUrl} reachable, key accepted (${Date.now() - started} ms)` };
  } catch (error) {
    return { check, outcome: 'fail', detail: `${baseUrl}: ${providerProblem(error, known?.env)}` };
  }
}

function providerProblem(error: unknown, env: string | undefined): string {
  if (!(error instanceof UpstreamError)) return messageOf(error);
  const keyVar = env ? `${env}_API_KEY` : 'its api_key';
  if (error.status === 401 || error.status === 403)
    return `the key was refused (HTTP ${error.status}): check ${keyVar}`;
  if (error.status === 404)
    return 'no model list at this address (HTTP 404): check the base URL, which usually ends in /v1';
  if (error.status !== undefined) return `answered HTTP ${error.status}: ${error.message}`;
  if (error.kind === 'timeout') return `no answer within ${PROBE_TIMEOUT_MS / 1000} s`;
  return `unreachable: ${error.message}`;
}
