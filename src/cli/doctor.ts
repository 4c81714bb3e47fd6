/**
 * `tollgate doctor`: checks what the server needs, one line per check, in plain words: the configuration, the
 * database and its migrations, Redis, the admin token, each configured provider's reachability and key, and
 * Stripe when purchasing is on. Exits 1 when a check fails; warnings do not fail. The provider and Stripe checks
 * live in their own modules, loaded only when there is something to check.
 */
import { existsSync } from 'node:fs';
import { ConfigError, KNOWN_PROVIDERS, loadConfig, type Config } from '../config/index.js';
import { messageOf } from '../errors/index.js';
import { inspectStorage } from '../storage/index.js';
import type { Check } from './doctor-check.js';
import { print, printJson, printTable, type JsonOption } from './output.js';

const REDIS_TIMEOUT_MS = 3_000;

export async function doctor(options: JsonOption): Promise<void> {
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
  const { connectFailFast } = await import('../redis/index.js');
  const { redis } = connectFailFast(config.redis_url, REDIS_TIMEOUT_MS, {
    lazyConnect: true,
    enableOfflineQueue: true,
    // Only a PING is sent: nothing to wait for on disconnect, and after a refused connection ioredis would otherwise
    // hold the process for its full disconnect timeout.
    disconnectTimeout: 0,
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
            'SMTP_URL is set but TOLLGATE_PUBLIC_URL is not: sign-ups are refused unless they come to a host listed in TOLLGATE_PUBLIC_HOSTS or to a loopback address',
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
  if (!Object.keys(config.providers).length) {
    const vars = KNOWN_PROVIDERS.map((p) => (p.keyless ? `${p.env}_BASE_URL` : `${p.env}_API_KEY`)).join(', ');
    return [
      {
        check: 'providers',
        outcome: 'warn',
        detail: `none configured: only the sandbox models answer (set one of ${vars})`,
      },
    ];
  }
  const { probeProviders } = await import('./doctor-providers.js');
  return probeProviders(config);
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
  const { stripeKeyCheck } = await import('./doctor-stripe.js');
  return [await stripeKeyCheck(key, apiBase), stripeWebhookCheck(webhookSecret, config.server.public_url)];
}

function stripeWebhookCheck(secret: string | undefined, publicUrl: string | undefined): Check {
  const check = 'stripe webhooks';
  if (!secret) {
    return {
      check,
      outcome: 'warn',
      detail:
        "STRIPE_WEBHOOK_SECRET not set: POST /webhooks/stripe refuses Stripe's events, so purchases are credited only when the gateway asks Stripe and refunds and disputes are never seen; set it to the signing secret (whsec_…) of the endpoint registered in Stripe",
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
