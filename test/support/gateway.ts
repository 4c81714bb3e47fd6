/**
 * Starts a real gateway (the same createApp as `npm start`) on a free port with a fresh database, and gives
 * tests the admin token, the first key and helpers to make accounts and keys through the admin API.
 */
import OpenAI from 'openai';
import type { Logger } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { loadConfig, type ConfigOverrides } from '../../src/config/index.js';
import type { EventSink } from '../../src/events/index.js';
import type { RateLimiter } from '../../src/limits/index.js';
import { adminCall } from './admin-call.js';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { deleteRedisKeys } from './redis.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface TestGateway {
  app: App;
  url: string;
  baseURL: string;
  firstKey: string;
  database: TestDatabase;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** A new account (with the sign-up grant) and its live key. */
  account(options?: { plan?: string; email?: string }): Promise<{ id: string; key: string }>;
  key(accountId: string, options?: Record<string, unknown>): Promise<{ id: string; key: string }>;
  /** Sets the balance to exactly `usd` through a correction or top-up. */
  setBalance(accountId: string, usd: number): Promise<void>;
  client(key: string, options?: Partial<ConstructorParameters<typeof OpenAI>[0]>): OpenAI;
  close(): Promise<void>;
}

export interface GatewayOptions {
  dialect?: 'sqlite' | 'postgres';
  env?: Record<string, string>;
  overrides?: ConfigOverrides;
  events?: EventSink;
  logger?: Logger;
  /** Replaces the rate limiter (e.g. one whose clock the test controls). */
  limiter?: RateLimiter;
  /** Rewrites the PostgreSQL URL the gateway connects to (e.g. through a test proxy). */
  databaseUrl?: (url: string) => string;
}

export async function startGateway(options: GatewayOptions = {}): Promise<TestGateway> {
  const database = await createTestDatabase(options.dialect ?? 'sqlite');
  const config = loadConfig({
    env: {
      TOLLGATE_DATA_DIR: database.dataDir,
      ...(database.databaseUrl
        ? { DATABASE_URL: options.databaseUrl?.(database.databaseUrl) ?? database.databaseUrl }
        : {}),
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_TEST_LOG_LEVEL ?? 'silent',
      PORT: '0',
      HOST: '127.0.0.1',
      ...options.env,
    },
    file: undefined,
    ...(options.overrides ? { overrides: options.overrides } : {}),
  });
  const app = await createApp(config, {
    ...(options.events ? { events: options.events } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.limiter ? { limiter: options.limiter } : {}),
  });
  const url = await app.listen();
  const admin = (method: string, path: string, body?: unknown) => adminCall(url, ADMIN_TOKEN, method, path, body);
  let counter = 0;
  const gateway: TestGateway = {
    app,
    url,
    baseURL: `${url}/v1`,
    firstKey: app.firstStart!.apiKey,
    database,
    admin,
    async account(opts = {}) {
      const { status, body } = await admin('POST', '/admin/accounts', {
        email: opts.email ?? `user${++counter}-${Date.now()}@example.com`,
        ...(opts.plan ? { plan: opts.plan } : {}),
      });
      if (status !== 201) throw new Error(`account creation failed: ${status} ${JSON.stringify(body)}`);
      return { id: body.id, key: body.api_key };
    },
    async key(accountId, opts = {}) {
      const { status, body } = await admin('POST', `/admin/accounts/${accountId}/keys`, opts);
      if (status !== 201) throw new Error(`key creation failed: ${status} ${JSON.stringify(body)}`);
      return { id: body.id, key: body.key };
    },
    async setBalance(accountId, usd) {
      const { body } = await admin('GET', `/admin/accounts/${accountId}`);
      const delta = Math.round((usd - body.balance.credits) * 1e9) / 1e9;
      if (delta !== 0) {
        const result = await admin('POST', `/admin/accounts/${accountId}/credits`, { amount: delta });
        if (result.status !== 200) throw new Error(`setBalance failed: ${JSON.stringify(result.body)}`);
      }
    },
    client: (key, clientOptions = {}) =>
      new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, ...clientOptions }),
    async close() {
      await app.close();
      await database.drop();
      if (config.redis_url) await deleteRedisKeys(config.redis_prefix, config.redis_url);
    },
  };
  return gateway;
}
