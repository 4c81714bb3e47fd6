/** Shared holds in the real Redis: exact across replicas, and a dead replica's holds are resolved by the sweeper. */
import { afterEach, expect, it } from 'vitest';
import { AccountCache, RedisCreditState, type Hold, type PlanLimits } from '../../src/billing/index.js';
import { openStorage, type KeyRecord, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { commandsDuring, deleteRedisKeys, REDIS_TEST_URL, withRedis } from '../support/redis.js';
import { needsRedis } from '../support/backends.js';

const URL = REDIS_TEST_URL;
const limits: PlanLimits = { requestsPerMinute: 1000, tokensPerMinute: 1_000_000, dailyLimitNano: null };
let database: TestDatabase;
let storage: Storage;
const prefix = `tgtest:credits:${process.pid}:${Date.now()}:`;
const states: RedisCreditState[] = [];

afterEach(async () => {
  await Promise.all(states.splice(0).map((s) => s.close()));
  await storage?.close();
  await database?.drop();
  await deleteRedisKeys(prefix);
});

async function setup(balanceNano: bigint) {
  database = await createTestDatabase('sqlite');
  storage = await openStorage({ dataDir: database.dataDir });
  await storage.ledger.createAccount({
    id: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    settings: '{}',
    grantNano: balanceNano,
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
    spendLimitNano: null,
    createdAt: 1,
  });
  const key = (await storage.keys.get('key_1')) as KeyRecord;
  const account = (await new AccountCache(storage).get('acct_1'))!;
  const replica = (ownerTtlMs = 5_000) => {
    const state = new RedisCreditState({ url: URL, prefix, storage, ownerTtlMs });
    states.push(state);
    state.start();
    return state;
  };
  const hold = (id: string, amountNano: bigint): Hold => ({ requestId: `req_${id}`, account, key, amountNano });
  return { key, account, replica, hold };
}

needsRedis('credit state in Redis', () => {
  it('lets no replica take what another holds', async () => {
    const { key, account, replica, hold } = await setup(1_000n);
    const a = replica();
    const b = replica();
    expect((await a.budgets(account, key, limits)).balanceAvailable).toBe(1_000n);
    expect(await a.take(hold('h1', 700n), limits)).toBe(true);
    expect((await b.budgets(account, key, limits)).balanceAvailable).toBe(300n);
    expect(await b.take(hold('h2', 400n), limits)).toBe(false);
    expect(await b.take(hold('h3', 300n), limits)).toBe(true);
    // A charge is capped at what is free: its own hold, never the other's.
    expect(await a.charge(hold('h1', 700n), 900n)).toBe(700n);
    expect((await b.budgets(account, key, limits)).balanceAvailable).toBe(0n);
    await b.release(hold('h3', 300n));
    expect((await a.budgets(account, key, limits)).balanceAvailable).toBe(300n);
  });

  it('handles zero holds and zero charges (Redis refuses "-0")', async () => {
    const { key, account, replica, hold } = await setup(1_000n);
    const a = replica();
    expect(await a.take(hold('z', 0n), limits)).toBe(true);
    expect(await a.charge(hold('z', 0n), 0n)).toBe(0n);
    await a.confirmed(hold('z', 0n), 0n, 0n, { balanceNano: 1_000n, version: account.version });
    expect(await a.take(hold('y', 10n), limits)).toBe(true);
    expect(await a.charge(hold('y', 10n), 0n)).toBe(0n);
    expect((await a.budgets(account, key, limits)).balanceAvailable).toBe(1_000n);
  });

  it('sweeps the holds and unwritten charges of a replica that died', async () => {
    const { key, account, replica, hold } = await setup(1_000n);
    const dying = replica(300);
    const survivor = replica(300);
    await survivor.budgets(account, key, limits);
    expect(await dying.take(hold('open', 200n), limits)).toBe(true);
    expect(await dying.take(hold('lost', 300n), limits)).toBe(true);
    expect(await dying.take(hold('written', 100n), limits)).toBe(true);
    await dying.charge(hold('lost', 300n), 250n);
    await dying.charge(hold('written', 100n), 100n);
    // The 'written' debit reached the ledger before the replica died; the 'lost' one did not.
    const result = await storage.ledger.commit({
      entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -100n, requestId: 'req_written' }],
    });
    await dying.close();
    expect((await survivor.budgets(account, key, limits)).balanceAvailable).toBe(1_000n - 200n - 250n - 100n);

    await new Promise((r) => setTimeout(r, 400));
    // One lease per replica and key holds all three.
    expect(await survivor.sweep()).toBe(1);
    const after = result.balances.get('acct_1')!;
    expect(after.balanceNano).toBe(900n);
    // Everything held or pending is back; the balance the survivor sees is the database's.
    account.balanceNano = after.balanceNano;
    account.version = after.version;
    expect((await survivor.budgets(account, key, limits)).balanceAvailable).toBe(900n);
    expect(await survivor.sweep()).toBe(0);
  });

  it('far from every limit, serves most holds and charges from a lease without a Redis call', async () => {
    const { key, account, replica, hold } = await setup(10_000_000_000n);
    const a = replica();
    const confirmations: Array<Promise<void>> = [];
    const [, commands] = await commandsDuring(prefix, async () => {
      for (let i = 0; i < 500; i++) {
        const h = hold(`h${i}`, 1_000n);
        await a.budgets(account, key, limits);
        expect(await a.take(h, limits)).toBe(true);
        expect(await a.charge(h, 600n)).toBe(600n);
        const result = await storage.ledger.commit({
          entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -600n, requestId: h.requestId }],
        });
        const balance = result.balances.get('acct_1')!;
        account.balanceNano = balance.balanceNano;
        account.version = balance.version;
        // As the wallet does: the response does not wait for Redis to hear of the durable debit.
        confirmations.push(a.confirmed(h, 600n, result.applied[0]!, balance));
        // The next request comes in a later turn of the event loop, as from a client at one connection.
        await new Promise((resolve) => setImmediate(resolve));
      }
      await Promise.all(confirmations);
    });
    const calls = commands.length;
    // Takes and charges almost never call Redis; confirmations are one call per lease every 50 ms.
    console.info(`redis calls: ${calls}`);
    expect(calls).toBeLessThan(50);
    await a.close();
    const shared = await withRedis((r) => r.hgetall(`${prefix}cr:{acct_1}`));
    expect(shared.bal).toBe((10_000_000_000n - 500n * 600n).toString());
    expect(shared.res).toBe('0');
    expect(await withRedis((r) => r.hlen(`${prefix}cr:{acct_1}:holds`))).toBe(0);
  });

  it('three replicas leasing concurrently spend the whole balance and never more', async () => {
    const balance = 2_000_000n;
    const { key, account, replica, hold } = await setup(balance);
    const replicas = [replica(), replica(), replica()];
    let next = 0;
    let charged = 0n;
    const confirmations: Array<Promise<void>> = [];
    const worker = async (state: RedisCreditState) => {
      for (let refused = 0; refused < 3;) {
        const budgets = await state.budgets(account, key, limits);
        const amount = budgets.balanceAvailable < 100n ? budgets.balanceAvailable : 100n;
        if (amount <= 0n) {
          refused++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const h = hold(`w${next++}`, amount);
        if (!(await state.take(h, limits))) continue;
        const charge = await state.charge(h, amount);
        charged += charge;
        const result = await storage.ledger.commit({
          entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -charge, requestId: h.requestId }],
        });
        const confirmed = result.balances.get('acct_1')!;
        if (confirmed.version > account.version) Object.assign(account, confirmed);
        confirmations.push(state.confirmed(h, charge, result.applied[0]!, confirmed));
      }
    };
    await Promise.all(replicas.flatMap((state) => [worker(state), worker(state), worker(state)]));
    await Promise.all(confirmations);
    const sum = await storage.ledger.sum('acct_1');
    expect(sum).toBeGreaterThanOrEqual(0n);
    // Far from the limit the replicas leased; near it they held exactly: everything was spendable.
    expect(charged).toBe(balance - sum);
    console.info(`left: ${sum}`);
    expect(sum).toBeLessThan(300n);
    await Promise.all(replicas.map((state) => state.close()));
    expect(await withRedis((r) => r.hget(`${prefix}cr:{acct_1}`, 'res'))).toBe('0');
  });
});
