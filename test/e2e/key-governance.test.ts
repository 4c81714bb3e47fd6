/**
 * Key governance through the official `openai` SDK against the running gateway: on SQLite (one process) and on
 * PostgreSQL + Redis with two replicas. A key with a daily limit stops at it (the 403 names the limit and when it
 * starts again; a concurrent burst across both replicas never spends past it, by the ledger) and starts again the
 * next UTC day (the clock is moved: vitest's fake Date in process, a preload that shifts Date in the replicas); an
 * expired key, and a key used from outside its `allowed_ips`, are refused (IPv4 and IPv6); the key's own requests
 * per minute refuse with `retry_after` while the account has room; a management key cannot call a model.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { adminCall } from '../support/admin-call.js';
import { needsPostgresAndRedis } from '../support/backends.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startReplicas, type Replicas } from '../support/replicas.js';

const DAY_MS = 86_400_000;
/** 12 prompt tokens at 150 nano-USD and up to 5 completion tokens at 600: about 4,800 nano-USD a request. */
const LIMIT_USD = 0.00003;
const LIMIT_NANO = 30_000n;
const hello = (content = 'Hello') => ({
  model: 'sandbox/echo',
  max_tokens: 5,
  messages: [{ role: 'user' as const, content }],
});

interface Target {
  /** Base URLs (no `/v1`) over IPv4, one per process. */
  urls: string[];
  /** The same processes over IPv6 (`http://[::1]:port`). */
  ipv6Urls: string[];
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  storage: Storage;
  /** Moves every gateway process's clock forward by `ms`. */
  shiftClock(ms: number): Promise<void>;
}

const client = (baseUrl: string, apiKey: string) => new OpenAI({ apiKey, baseURL: `${baseUrl}/v1`, maxRetries: 0 });

/** The SDK's error for a refused call (its `error` is the envelope's `error`), or the answer when it was not. */
async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('the call was answered, not refused');
}

const nextUtcMidnight = (at: number) => Math.floor(at / DAY_MS) * DAY_MS + DAY_MS;

function scenarios(name: string, open: () => Promise<Target>, close: () => Promise<void>) {
  describe(name, () => {
    let target: Target;
    let accountId: string;
    const key = async (fields: Record<string, unknown>) => {
      const made = await target.admin('POST', `/admin/accounts/${accountId}/keys`, fields);
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      return made.body as { id: string; key: string; expires_at: string | null };
    };
    /** What the ledger debited for the key, in nano-USD. */
    const debited = async (keyId: string) =>
      (await target.storage.ledger.list(accountId, { limit: 1_000 }))
        .filter((entry) => entry.kind === 'debit' && entry.keyId === keyId)
        .reduce((sum, entry) => sum - entry.amountNano, 0n);

    beforeAll(async () => {
      target = await open();
      const account = await target.admin('POST', '/admin/accounts', { email: `team-${Date.now()}@example.com` });
      expect(account.status).toBe(201);
      accountId = account.body.id;
    }, 90_000);
    afterAll(close);

    it("refuses from outside the key's allowed_ips and answers from inside, over IPv4 and IPv6", async () => {
      const v4 = await key({ allowed_ips: ['127.0.0.0/8'] });
      const v6 = await key({ allowed_ips: ['::1/128'] });
      const elsewhere = await key({ allowed_ips: ['10.0.0.0/8', '2001:db8::/32'] });
      for (const [i, url] of target.urls.entries()) {
        const v6Url = target.ipv6Urls[i]!;
        expect((await client(url, v4.key).chat.completions.create(hello())).choices[0]!.message.content).toBe('Hello');
        expect((await client(v6Url, v6.key).chat.completions.create(hello())).choices[0]!.message.content).toBe(
          'Hello',
        );
        for (const [base, used, address] of [
          [v6Url, v4.key, '::1'],
          [url, v6.key, '127.0.0.1'],
          [url, elsewhere.key, '127.0.0.1'],
        ] as const) {
          const refused = await refusal(client(base, used).chat.completions.create(hello()));
          expect(refused.status).toBe(403);
          expect(refused.code).toBe('ip_not_allowed');
          expect(refused.message).toContain(address);
        }
        // The read routes check the same.
        const models = await refusal(client(url, elsewhere.key).models.list());
        expect(models.code).toBe('ip_not_allowed');
      }
    });

    it("refuses at the key's own requests per minute with retry_after, while the account has room", async () => {
      const limited = await key({ requests_per_minute: 2 });
      const url = target.urls[0]!;
      for (let i = 0; i < 2; i++) await client(url, limited.key).chat.completions.create(hello());
      const refused = await refusal(client(target.urls.at(-1)!, limited.key).chat.completions.create(hello()));
      expect(refused.status).toBe(429);
      expect(refused.code).toBe('rate_limit_exceeded');
      expect(refused.message).toContain("this API key's own limit of 2 requests per minute");
      const retryAfter = (refused.error as { retry_after?: number }).retry_after;
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(refused.headers?.get('retry-after')).toBe(String(retryAfter));
      // The account's own limit has room: another key of it is answered.
      const other = await key({});
      expect((await client(url, other.key).chat.completions.create(hello())).choices).toHaveLength(1);
    });

    it('refuses a management key calling a model', async () => {
      const management = await key({ permissions: 'management' });
      const refused = await refusal(client(target.urls[0]!, management.key).chat.completions.create(hello()));
      expect(refused.status).toBe(403);
      expect(refused.code).toBe('permission_denied');
      const embeddings = await refusal(
        client(target.urls[0]!, management.key).embeddings.create({ model: 'sandbox/embed', input: 'x' }),
      );
      expect(embeddings.status).toBe(403);
      expect((await client(target.urls[0]!, management.key).models.list()).data.length).toBeGreaterThan(0);
    });

    it('stops a key at its daily limit, a concurrent burst never past it, refuses an expired key, and starts again the next UTC day', async () => {
      const daily = await key({ limit: LIMIT_USD, limit_reset: 'daily' });
      const expiring = await key({ expires_at: new Date(Date.now() + 3_600_000).toISOString() });
      const expiresAt = expiring.expires_at!;
      // A burst across every process: each request holds its worst case against the key's limit.
      const burst = await Promise.allSettled(
        Array.from({ length: 24 }, (_, i) =>
          client(target.urls[i % target.urls.length]!, daily.key).chat.completions.create(hello(`burst ${i}`)),
        ),
      );
      const answered = burst.filter((r) => r.status === 'fulfilled').length;
      const refusals = burst.flatMap((r) =>
        r.status === 'rejected' ? [r.reason as InstanceType<typeof OpenAI.APIError>] : [],
      );
      expect(answered).toBeGreaterThan(0);
      expect(refusals.length).toBeGreaterThan(0);
      for (const refused of refusals) expect(refused.code).toBe('key_limit_exceeded');
      const spent = await debited(daily.id);
      expect(spent).toBeGreaterThan(0n);
      expect(spent).toBeLessThanOrEqual(LIMIT_NANO);

      const now = Date.now();
      const refused = await refusal(client(target.urls[0]!, daily.key).chat.completions.create(hello()));
      expect(refused.status).toBe(403);
      expect(refused.code).toBe('key_limit_exceeded');
      const midnight = new Date(nextUtcMidnight(now)).toISOString();
      expect(refused.message).toContain(`${LIMIT_USD} USD per UTC day`);
      expect(refused.message).toContain(midnight);
      const retryAfter = (refused.error as { retry_after?: number }).retry_after!;
      expect(Math.abs(retryAfter - (nextUtcMidnight(now) - now) / 1000)).toBeLessThan(30);
      const reported = await client(target.urls.at(-1)!, daily.key).get<Record<string, unknown>>('/key');
      expect(reported).toMatchObject({ limit: LIMIT_USD, limit_reset: 'daily', limit_resets_at: midnight });
      expect(BigInt(Math.round((reported.usage as number) * 1e9))).toBe(spent);
      expect((await client(target.urls[0]!, expiring.key).chat.completions.create(hello())).choices).toHaveLength(1);

      // The next UTC day, five minutes in.
      await target.shiftClock(nextUtcMidnight(Date.now()) - Date.now() + 5 * 60_000);
      for (const url of target.urls) {
        const again = await client(url, daily.key).chat.completions.create(hello('a new day'));
        expect(again.choices[0]!.message.content).toBe('a new day');
        const expired = await refusal(client(url, expiring.key).chat.completions.create(hello()));
        expect(expired.status).toBe(403);
        expect(expired.code).toBe('key_expired');
        expect(expired.message).toContain(expiresAt);
      }
      const today = await client(target.urls[0]!, daily.key).get<Record<string, unknown>>('/key');
      expect((today.usage as number) * 1e9).toBeLessThanOrEqual(Number(LIMIT_NANO));
      expect(today.limit_remaining as number).toBeLessThan(LIMIT_USD);
      expect(await debited(daily.id)).toBeGreaterThan(spent);
    }, 60_000);
  });
}

let gateway: TestGateway | undefined;
scenarios(
  'key governance on SQLite',
  async () => {
    gateway = await startGateway({ env: { HOST: '::' } });
    const port = new URL(gateway.url).port;
    return {
      urls: [`http://127.0.0.1:${port}`],
      ipv6Urls: [`http://[::1]:${port}`],
      admin: (method, path, body) => adminCall(`http://127.0.0.1:${port}`, ADMIN_TOKEN, method, path, body),
      storage: gateway.app.storage,
      shiftClock: async (ms) => {
        vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
        vi.setSystemTime(Date.now() + ms);
        // Key lookups are cached for at most a second (by the clock just moved).
        await new Promise((r) => setTimeout(r, 50));
      },
    };
  },
  async () => {
    vi.useRealTimers();
    await gateway?.close();
  },
);

let replicas: Replicas | undefined;
let replicaStorage: Storage | undefined;
const clockDir = mkdtempSync(join(tmpdir(), 'tollgate-clock-'));
const clockFile = join(clockDir, 'offset');
needsPostgresAndRedis('on PostgreSQL and Redis', () => {
  scenarios(
    'key governance on two replicas',
    async () => {
      writeFileSync(clockFile, '0');
      replicas = await startReplicas(2, {
        env: {
          HOST: '::',
          NODE_OPTIONS: `--import ${resolve('test/support/clock-shift.mjs')}`,
          TOLLGATE_TEST_CLOCK_FILE: clockFile,
        },
      });
      replicaStorage = await openStorage({
        dataDir: replicas.database.dataDir,
        databaseUrl: replicas.database.databaseUrl,
      });
      const ports = replicas.urls.map((url) => new URL(url).port);
      return {
        urls: replicas.urls,
        ipv6Urls: ports.map((port) => `http://[::1]:${port}`),
        admin: (method, path, body) => replicas!.admin(method, path, body),
        storage: replicaStorage,
        shiftClock: async (ms) => {
          writeFileSync(clockFile, String(ms));
          // Read within 50 ms; key lookups cached before it expire by the moved clock.
          await new Promise((r) => setTimeout(r, 300));
        },
      };
    },
    async () => {
      await replicaStorage?.close();
      await replicas?.stop();
      rmSync(clockDir, { recursive: true, force: true });
    },
  );
});
