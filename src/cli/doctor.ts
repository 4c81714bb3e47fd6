/**
 * `tollgate doctor`: checks what the server needs, one line per check, in plain words: the configuration, the
 * database and its migrations, Redis, the admin token, each configured provider's reachability and key, and
 * Stripe when purchasing is on. Exits 1 when a check fails; warnings do not fail.
 */
import { existsSync } from 'node:fs';
import { Command } from 'commander';
import Stripe from 'stripe';
import { ConfigError, KNOWN_PROVIDERS, loadConfig, type Config } from '../config/index.js';
import { connectFailFast } from '../redis/index.js';
import { inspectStorage } from '../storage/index.js';
import { ProviderSet, UpstreamError } from '../providers/index.js';
import { stripeClient } from '../payments/index.js';
import { print, printJson, printTable } from './output.js';

type Outcome = 'ok' | 'warn' | 'fail' | 'skip';

interface Check {
  check: string;
  outcome: Outcome;
  detail: string;
}

const PROBE_TIMEOUT_MS = 10_000;
const REDIS_TIMEOUT_MS = 3_000;
const STRIPE_TIMEOUT_MS = 5_000;
/**
 * Stripe's check asks for a PaymentIntent that does not exist: the answer `resource_missing` (404) says the key was
 * accepted, with no more access than the gateway's own use needs (a restricted key may lack balance or list reads).
 */
const PROBE_PAYMENT_INTENT = 'pi_tollgate_doctor_probe';

export function doctorCommand(): Command {
  return new Command('doctor')
    .description(
      'Check the configuration, database, Redis, every configured provider and Stripe, and say what is wrong',
    )
    .option('--json', 'print JSON: {ok, checks: [{check, outcome, detail}]}')
    .action(async (options: { json?: boolean }) => {
      const checks = await runChecks();
      const ok = !checks.some((c) => c.outcome === 'fail');
      if (options.json) printJson({ ok, checks });
      else {
        printTable(
          ['CHECK', 'RESULT', 'DETAIL'],
          checks.map((c) => [c.check, c.outcome.toUpperCase(), c.detail]),
        );
        print('', ok ? 'No problems found.' : `${checks.filter((c) => c.outcome === 'fail').length} problem(s) found.`);
      }
      if (!ok) process.exitCode = 1;
    });
}

async function runChecks(): Promise<Check[]> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return [{ check: 'configuration', outcome: 'fail', detail: error.message }];
  }
  const file = process.env.TOLLGATE_CONFIG ?? (existsSync('tollgate.config.yaml') ? 'tollgate.config.yaml' : undefined);
  const sources = file ? `defaults, ${file}, environment` : 'defaults and environment; no tollgate.config.yaml here';
  const checks: Check[] = [{ check: 'configuration', outcome: 'ok', detail: `valid (${sources})` }];
  checks.push(
    await databaseCheck(config),
    await redisCheck(config),
    adminCheck(config),
    keySecretCheck(config),
    signupCheck(config),
  );
  checks.push(...(await providerChecks(config)));
  checks.push(...(await stripeChecks(config)));
  return checks;
}

async function databaseCheck(config: Config): Promise<Check> {
  const where = config.storage.database_url
    ? redactUrl(config.storage.database_url)
    : `${config.storage.data_dir}/tollgate.db`;
  try {
    const { dialect, pending } = await inspectStorage({
      dataDir: config.storage.data_dir,
      databaseUrl: config.storage.database_url,
    });
    if (pending.length) {
      return {
        check: 'database',
        outcome: 'warn',
        detail: `${dialect} at ${where}: ${pending.length} migration(s) pending (${pending.join(', ')}); \`tollgate migrate\` or the next start applies them`,
      };
    }
    return { check: 'database', outcome: 'ok', detail: `${dialect} at ${where}, migrations up to date` };
  } catch (error) {
    return { check: 'database', outcome: 'fail', detail: `cannot use the database at ${where}: ${messageOf(error)}` };
  }
}

async function redisCheck(config: Config): Promise<Check> {
  if (!config.redis_url)
    return {
      check: 'redis',
      outcome: 'skip',
      detail: 'REDIS_URL not set: rate limits and credit holds live in this process (one replica)',
    };
  const where = redactUrl(config.redis_url);
  const { redis } = connectFailFast(config.redis_url, REDIS_TIMEOUT_MS, {
    lazyConnect: true,
    enableOfflineQueue: true,
  });
  try {
    const started = Date.now();
    await redis.ping();
    return { check: 'redis', outcome: 'ok', detail: `${where} answered in ${Date.now() - started} ms` };
  } catch (error) {
    return { check: 'redis', outcome: 'fail', detail: `no answer from ${where}: ${messageOf(error)}` };
  } finally {
    redis.disconnect();
  }
}

function adminCheck(config: Config): Check {
  return config.admin_token
    ? { check: 'admin token', outcome: 'ok', detail: 'set: /admin and /metrics are available' }
    : {
        check: 'admin token',
        outcome: 'ok',
        detail:
          'TOLLGATE_ADMIN_TOKEN not set: the token printed at first start (kept hashed in the database) is the one',
      };
}

function keySecretCheck(config: Config): Check {
  return config.key_secret
    ? {
        check: 'key secret',
        outcome: 'ok',
        detail: 'given by the configuration (TOLLGATE_KEY_SECRET), not stored in the database',
      }
    : {
        check: 'key secret',
        outcome: 'warn',
        detail:
          'TOLLGATE_KEY_SECRET not set: the secret that hashes API keys is stored in the database next to the hashes; a production deployment should give it in the environment (docs/operations.md#the-key-secret)',
      };
}

function signupCheck(config: Config): Check {
  const check = 'sign-up';
  if (!config.dashboard.enabled || !config.dashboard.signup)
    return { check, outcome: 'skip', detail: 'self-serve sign-up is closed' };
  const grant = `${config.credits.signup_grant} USD`;
  if (config.smtp.url) {
    return config.server.public_url
      ? {
          check,
          outcome: 'ok',
          detail: `SMTP at ${redactUrl(config.smtp.url)}: the ${grant} sign-up credit waits for a verified email`,
        }
      : {
          check,
          outcome: 'warn',
          detail:
            'SMTP_URL is set but TOLLGATE_PUBLIC_URL is not: verification links use the Host each sign-up request came with',
        };
  }
  return config.signup.grant_without_verification
    ? {
        check,
        outcome: 'warn',
        detail: `SMTP_URL not set: every sign-up gets ${grant} at once, unverified; a public deployment should set SMTP_URL (or signup.grant_without_verification: false)`,
      }
    : { check, outcome: 'ok', detail: 'SMTP_URL not set: new self-serve accounts start at 0 USD' };
}

async function providerChecks(config: Config): Promise<Check[]> {
  const ids = Object.keys(config.providers);
  if (!ids.length) {
    const vars = KNOWN_PROVIDERS.map((p) => (p.keyless ? `${p.env}_BASE_URL` : `${p.env}_API_KEY`)).join(', ');
    return [
      {
        check: 'providers',
        outcome: 'warn',
        detail: `none configured: only the sandbox models answer (set one of ${vars})`,
      },
    ];
  }
  const providers = new ProviderSet(config);
  try {
    return await Promise.all(ids.map((id) => providerCheck(config, providers, id)));
  } finally {
    await providers.close();
  }
}

async function providerCheck(config: Config, providers: ProviderSet, id: string): Promise<Check> {
  const check = `provider ${id}`;
  const known = KNOWN_PROVIDERS.find((p) => p.id === id);
  const settings = config.providers[id]!;
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

/** Purchasing through Stripe: the key's mode and where it goes, whether Stripe accepts it, the webhook secret. */
async function stripeChecks(config: Config): Promise<Check[]> {
  const { secret_key: key, webhook_secret: webhookSecret, api_base: apiBase } = config.payments.stripe;
  if (!key)
    return [
      {
        check: 'stripe',
        outcome: 'skip',
        detail:
          'STRIPE_SECRET_KEY not set: purchasing is off (users cannot buy credit or recharge by card; an operator adds credit)',
      },
    ];
  return [await stripeKeyCheck(key, apiBase), stripeWebhookCheck(webhookSecret, config.server.public_url)];
}

async function stripeKeyCheck(key: string, apiBase: string | undefined): Promise<Check> {
  const check = 'stripe';
  const prefix = /^[sr]k_(live|test)_/.exec(key);
  const mode = prefix?.[1];
  const elsewhere = apiBase !== undefined && new URL(apiBase).hostname !== 'api.stripe.com';
  const where = elsewhere ? apiBase!.replace(/\/$/, '') : 'Stripe';
  if (mode === 'live' && elsewhere) {
    return {
      check,
      outcome: 'warn',
      detail: `a live key (${prefix?.[0]}…) with STRIPE_API_BASE=${where}, which is not Stripe: real payments go through Stripe's own API (unset STRIPE_API_BASE). Not probed, so doctor did not send the key there`,
    };
  }
  const started = Date.now();
  try {
    await stripeClient(key, apiBase).paymentIntents.retrieve(
      PROBE_PAYMENT_INTENT,
      {},
      { timeout: STRIPE_TIMEOUT_MS, maxNetworkRetries: 0 },
    );
  } catch (error) {
    const missing = error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404;
    if (!missing) return { check, outcome: 'fail', detail: `${where}: ${stripeProblem(error, key)}` };
  }
  const accepted = `${where} accepted the key (${Date.now() - started} ms)`;
  if (mode === 'live') return { check, outcome: 'ok', detail: `live mode: ${accepted}` };
  if (mode === 'test')
    return {
      check,
      outcome: 'warn',
      detail: `test mode (${prefix?.[0]}…): ${accepted}; purchases are paid with Stripe's test cards and no money moves. A live deployment needs a live key (sk_live_…)`,
    };
  return {
    check,
    outcome: 'warn',
    detail: `${accepted}, but STRIPE_SECRET_KEY does not look like a Stripe secret key (sk_live_… or sk_test_…)`,
  };
}

/** Why Stripe's check failed, without the key (Stripe's own messages may quote part of it). */
function stripeProblem(error: unknown, key: string): string {
  if (error instanceof Stripe.errors.StripeAuthenticationError)
    return `the key was refused (HTTP ${error.statusCode ?? 401}): check STRIPE_SECRET_KEY`;
  if (error instanceof Stripe.errors.StripePermissionError) {
    return `the key may not read PaymentIntents (HTTP ${error.statusCode ?? 403}): a restricted key needs write access to Checkout Sessions, Customers and PaymentIntents`;
  }
  if (error instanceof Stripe.errors.StripeConnectionError) {
    if (/timeout/i.test(error.message)) return `no answer within ${STRIPE_TIMEOUT_MS / 1000} s`;
    const cause = (error.detail as { message?: unknown } | undefined)?.message;
    return `unreachable: ${withoutKey(typeof cause === 'string' ? cause : error.message, key)}`;
  }
  if (error instanceof Stripe.errors.StripeError)
    return `answered${error.statusCode ? ` HTTP ${error.statusCode}` : ''}: ${withoutKey(error.message, key)}`;
  return withoutKey(messageOf(error), key);
}

function withoutKey(text: string, key: string): string {
  const masked = key.length >= 8 ? text.split(key).join('[key]') : text;
  return masked.replace(/\b[sr]k_(live|test)_[A-Za-z0-9*]+/g, '[key]');
}

function stripeWebhookCheck(secret: string | undefined, publicUrl: string | undefined): Check {
  const check = 'stripe webhooks';
  if (!secret) {
    return {
      check,
      outcome: 'warn',
      detail:
        "STRIPE_WEBHOOK_SECRET not set: POST /webhooks/stripe refuses Stripe's events, so no purchase is ever credited; set it to the signing secret (whsec_…) of the endpoint registered in Stripe",
    };
  }
  if (!secret.startsWith('whsec_'))
    return {
      check,
      outcome: 'warn',
      detail:
        "STRIPE_WEBHOOK_SECRET does not look like a Stripe signing secret (whsec_…): Stripe's events would fail the signature check",
    };
  const endpoint = publicUrl ? `${publicUrl.replace(/\/$/, '')}/webhooks/stripe` : '/webhooks/stripe';
  return { check, outcome: 'ok', detail: `set: Stripe's events to ${endpoint} are verified` };
}

/** A connection URL without its password, for printing. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
