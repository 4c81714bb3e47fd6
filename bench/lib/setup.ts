/** Preparing tollgate for the benchmark (admin API), and the PostgreSQL database of the second configuration. */
import { connect } from 'node:net';
import pg from 'pg';
import { request } from 'undici';
import { onCleanup } from './processes.js';

export async function call<T>(
  method: 'GET' | 'POST' | 'PATCH',
  url: string,
  token: string,
  body?: unknown,
): Promise<T> {
  const res = await request(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  if (res.statusCode < 200 || res.statusCode > 299)
    throw new Error(`${method} ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

export interface BenchAccount {
  accountId: string;
  apiKey: string;
  model: string;
  /** An OpenAI embedding model, for the non-chat endpoint's figures. */
  embeddingModel: string;
  /**
   * A Mistral chat model (the mock behind an OpenAI-compatible provider that is not OpenAI): its `/v1/messages`
   * and `/v1/responses` requests are translated through chat, not passed through.
   */
  translatedModel: string;
}

/**
 * A real account through the admin API: plan `enterprise`, no daily limit, rate limits far above what one process
 * can serve (so the limiter is exercised but never refuses), 1,000,000 USD of credit; and the model ids to use.
 */
export async function prepareAccount(base: string, adminToken: string): Promise<BenchAccount> {
  const account = await call<{ id: string; api_key: string }>('POST', `${base}/admin/accounts`, adminToken, {
    email: `bench-${Date.now()}@example.com`,
    plan: 'enterprise',
  });
  await call('PATCH', `${base}/admin/accounts/${account.id}`, adminToken, {
    daily_limit: 'none',
    requests_per_minute: 1_000_000_000,
    tokens_per_minute: 1_000_000_000_000,
  });
  await call('POST', `${base}/admin/accounts/${account.id}/credits`, adminToken, {
    amount: 1_000_000,
    note: 'benchmark',
  });
  const first = async (capability: string, provider = 'openai') => {
    const url = `${base}/v1/models?provider=${provider}&capability=${capability}`;
    const models = await call<{ data: Array<{ id: string }> }>('GET', url, account.api_key);
    const id = models.data[0]?.id;
    if (!id) throw new Error(`GET ${url} listed no model; is ${provider.toUpperCase()}_API_KEY reaching tollgate?`);
    return id;
  };
  return {
    accountId: account.id,
    apiKey: account.api_key,
    model: await first('chat'),
    embeddingModel: await first('embedding'),
    translatedModel: await first('chat', 'mistral'),
  };
}

export const PG_ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A fresh database on the PostgreSQL server of PG_ADMIN_URL, dropped at cleanup. */
export async function createDatabase(): Promise<{ url: string; name: string }> {
  const name = `tg_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `cannot connect to PostgreSQL at ${PG_ADMIN_URL} (set TOLLGATE_BENCH_PG_URL): ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  onCleanup(async () => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

/** Process ids of the PostgreSQL backends serving `database` (to read their CPU time, when /proc shows them). */
export async function backendPids(database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    const result = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    );
    return result.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

export function reachable(url: string, timeoutMs = 1000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
