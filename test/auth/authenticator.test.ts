import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/auth/authenticator.js';
import { generateKey, hashKey, keyHint } from '../../src/auth/keys.js';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

const SECRET = 'authenticator-test-secret';
const TTL_MS = 300;

describe('Authenticator: cached key lookups', () => {
  let database: TestDatabase;
  let storage: Storage;
  const authenticators: Authenticator[] = [];

  afterEach(async () => {
    for (const auth of authenticators.splice(0)) auth.close();
    await storage?.close();
    await database?.drop();
  });

  /** A real key in a real database, and the database's lookups made slow and counted. */
  async function setup() {
    database = await createTestDatabase('sqlite');
    storage = await openStorage({ dataDir: database.dataDir });
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 0n,
    });
    const presented = generateKey('tg', 'live');
    await storage.keys.insert({
      id: 'key_1',
      accountId: 'acct_1',
      name: 'k',
      keyHash: hashKey(SECRET, presented),
      hint: keyHint(presented),
      environment: 'live',
      permissions: 'full',
      models: [],
      spendLimitNano: null,
      createdAt: Date.now(),
    });
    const lookups = { count: 0, batched: 0 };
    const getByHash = storage.keys.getByHash.bind(storage.keys);
    storage.keys.getByHash = async (hash) => {
      lookups.count++;
      await sleep(40);
      return getByHash(hash);
    };
    const getByHashes = storage.keys.getByHashes.bind(storage.keys);
    storage.keys.getByHashes = async (hashes) => {
      lookups.count++;
      lookups.batched++;
      await sleep(40);
      return getByHashes(hashes);
    };
    const auth = new Authenticator({ storage, secret: SECRET, prefix: 'tg', ttlMs: TTL_MS });
    authenticators.push(auth);
    const timed = async () => {
      const started = performance.now();
      const key = await auth.authenticate(`Bearer ${presented}`);
      return { key, ms: performance.now() - started };
    };
    return { timed, lookups };
  }

  it('keeps a key in steady use fresh in the background: after the first request, none waits for the database', async () => {
    const { timed, lookups } = await setup();
    expect((await timed()).ms).toBeGreaterThanOrEqual(35);
    const waits: number[] = [];
    for (let i = 0; i < 12; i++) {
      await sleep(TTL_MS / 4);
      const { key, ms } = await timed();
      expect(key.id).toBe('key_1');
      waits.push(ms);
    }
    // 12 requests over 900 ms, three times the cache's life: refreshed ahead by the timer, never awaited.
    expect(Math.max(...waits)).toBeLessThan(30);
    expect(lookups.batched).toBeGreaterThanOrEqual(3);
    expect(lookups.count - lookups.batched).toBe(1);
    // Unused, the key is refreshed at most once more (for the use before), then it expires and is looked up
    // again before it is trusted.
    await sleep(2 * TTL_MS + 50);
    expect((await timed()).ms).toBeGreaterThanOrEqual(35);
  });

  it('still notices a revocation within the cache life', async () => {
    const { timed } = await setup();
    await timed();
    await storage.keys.revoke('key_1', Date.now());
    const revokedAt = Date.now();
    let refused = false;
    while (!refused && Date.now() - revokedAt < 2 * TTL_MS) {
      refused = await timed().then(
        () => false,
        (error: { code?: string }) => error.code === 'invalid_api_key',
      );
      if (!refused) await sleep(20);
    }
    expect(refused).toBe(true);
    expect(Date.now() - revokedAt).toBeLessThanOrEqual(TTL_MS + 100);
  });
});
