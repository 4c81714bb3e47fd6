/**
 * A key's spend limit that resets (`limit` with `limit_reset`), in both credit states: its spend in the current
 * period plus its holds stay within the limit, a new UTC period starts from the database's figure for it (0 for a
 * period nobody spent in yet).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AccountCache,
  MemoryCreditState,
  RedisCreditState,
  admit,
  type AccountState,
  type CreditState,
  type Hold,
  type PlanLimits,
} from '../../src/billing/index.js';
import { openStorage, periodOf, type KeyRecord, type Storage } from '../../src/storage/index.js';
import { needsRedis } from '../support/backends.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { deleteRedisKeys, REDIS_TEST_URL } from '../support/redis.js';

const DAY_1 = Date.parse('2026-11-28T12:00:00Z');
const DAY_2 = Date.parse('2026-11-29T00:00:01Z');
const limits: PlanLimits = { requestsPerMinute: 1000, tokensPerMinute: 1_000_000, dailyLimitNano: null };
const prefix = `tgtest:keylimit:${process.pid}:${Date.now()}:`;
let database: TestDatabase | undefined;
let storage: Storage | undefined;
const states: RedisCreditState[] = [];

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(states.splice(0).map((s) => s.close()));
  await storage?.close();
  await database?.drop();
  storage = database = undefined;
  await deleteRedisKeys(prefix);
});

/** An account with 1 USD and a key limited to 1,000 nano-USD a day, of which the database says 600 are spent today. */
async function setup(): Promise<{ account: AccountState; key: KeyRecord }> {
  database = await createTestDatabase('sqlite');
  storage = await openStorage({ dataDir: database.dataDir });
  await storage.ledger.createAccount({
    id: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    settings: '{}',
    grantNano: 1_000_000_000n,
  });
  await storage.keys.insert({
    id: 'key_1',
    accountId: 'acct_1',
    name: 'k',
    keyHash: 'h',
    hint: 'h',
    environment: 'live',
    permissions: 'full',
    models: [],
    spendLimitNano: 1_000n,
    limitReset: 'daily',
    createdAt: 1,
  });
  const stored = (await storage.keys.get('key_1'))!;
  const key = { ...stored, periodSpentNano: 600n, period: periodOf('daily', DAY_1) };
  const account = (await new AccountCache(storage).get('acct_1'))!;
  return { account, key };
}

function redisState(): RedisCreditState {
  const state = new RedisCreditState({ url: REDIS_TEST_URL, prefix, storage: storage! });
  states.push(state);
  state.start();
  return state;
}

const hold = (account: AccountState, key: KeyRecord, id: string, amountNano: bigint): Hold => ({
  requestId: `req_${id}`,
  account,
  key,
  amountNano,
});

/** The same story for each credit state: `second` is another replica where there is one (Redis). */
async function limitThatResets(first: CreditState, second: CreditState, account: AccountState, key: KeyRecord) {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(DAY_1);
  expect((await first.budgets(account, key, limits)).keyRemaining).toBe(400n);
  // The hold counts against the key's limit, on every replica.
  expect(await first.take(hold(account, key, 'a', 300n), limits)).toBe(true);
  expect((await second.budgets(account, key, limits)).keyRemaining).toBe(100n);
  expect(await second.take(hold(account, key, 'b', 200n), limits)).toBe(false);
  expect(await second.take(hold(account, key, 'c', 100n), limits)).toBe(true);
  await second.release(hold(account, key, 'c', 100n));
  // Charged beyond its hold, a request gets only what the limit has left; then its debit is written.
  const charged = hold(account, key, 'a', 300n);
  expect(await first.charge(charged, 450n, limits)).toBe(400n);
  await first.confirmed(charged, 400n, -400n, {
    balanceNano: account.balanceNano - 400n,
    version: account.version + 1n,
  });
  expect((await second.budgets(account, key, limits)).keyRemaining).toBe(0n);

  vi.setSystemTime(DAY_1 + 3_600_000);
  expect((await first.budgets(account, key, limits)).keyRemaining).toBe(0n);
  // The next UTC day: the old day's spend no longer counts, on every replica.
  vi.setSystemTime(DAY_2);
  expect((await second.budgets(account, key, limits)).keyRemaining).toBe(1_000n);
  expect(await second.take(hold(account, key, 'd', 700n), limits)).toBe(true);
  expect((await first.budgets(account, key, limits)).keyRemaining).toBe(300n);
  // A lookup in the new day brings the database's figure for it: the new day starts there (once, when it starts).
  const looked = { ...key, period: periodOf('daily', DAY_2), periodSpentNano: 50n };
  expect((await first.budgets(account, looked, limits)).keyRemaining).toBe(300n);
}

describe('a key limit that resets, in memory', () => {
  it('holds and spend stay within the day, and the next UTC day starts again', async () => {
    const { account, key } = await setup();
    const state = new MemoryCreditState();
    await limitThatResets(state, state, account, key);
  });

  it('a new period seen first through a fresh lookup starts at its database figure', async () => {
    const { account, key } = await setup();
    const state = new MemoryCreditState();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(DAY_2);
    const looked = { ...key, period: periodOf('daily', DAY_2), periodSpentNano: 250n };
    expect((await state.budgets(account, looked, limits)).keyRemaining).toBe(750n);
  });
});

needsRedis('a key limit that resets, in Redis across replicas', () => {
  it('holds and spend stay within the day on every replica, and the next UTC day starts again', async () => {
    const { account, key } = await setup();
    await limitThatResets(redisState(), redisState(), account, key);
  });

  it('spend confirmed for a day that is over is not counted in the new one', async () => {
    const { account, key } = await setup();
    const [a, b] = [redisState(), redisState()];
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(DAY_1);
    const open = hold(account, key, 'x', 300n);
    expect(await a.take(open, limits)).toBe(true);
    expect(await a.charge(open, 300n)).toBe(300n);
    vi.setSystemTime(DAY_2);
    expect((await b.budgets(account, key, limits)).keyRemaining).toBe(1_000n - 300n);
    // The debit of the old day is written now: it leaves the lease, and the new day's spend stays 0.
    await a.confirmed(open, 300n, -300n, { balanceNano: account.balanceNano - 300n, version: account.version + 1n });
    expect((await b.budgets(account, key, limits)).keyRemaining).toBe(1_000n);
  });
});

describe('the refusal at a key limit', () => {
  it('names the limit, its period and when it starts again, with retry_after until then', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(DAY_1);
    const input = {
      price: { promptPer1k: 1_000_000n, completionPer1k: 1_000_000n },
      feesNano: 0n,
      promptTokens: 10,
      promptCeiling: 10,
      requestedMaxTokens: 10,
      choices: 1,
      modelMaxTokens: 100,
      contextLength: 1000,
      balanceAvailable: 1_000_000_000n,
      dailyRemaining: null,
      keyRemaining: 5n,
      keyLimit: { limitNano: 5_000_000_000n, reset: 'daily' as const },
      free: false,
    };
    const refusal = (() => {
      try {
        admit(input);
      } catch (error) {
        return error as { code: string; message: string; retryAfter?: number; status: number };
      }
      throw new Error('admitted');
    })();
    expect(refusal).toMatchObject({ code: 'key_limit_exceeded', status: 403, retryAfter: 12 * 3600 });
    expect(refusal.message).toContain('5 USD per UTC day');
    expect(refusal.message).toContain('2026-11-29T00:00:00.000Z');
    const never = { ...input, keyLimit: { limitNano: 5_000_000_000n, reset: null } };
    expect(() => admit(never)).toThrow(/spend limit of 5 USD .*does not start again/);
  });
});
