/** Shared holds in the real Redis: exact across replicas, and a dead replica's holds are resolved by the sweeper. */
import { afterEach, describe, expect, it } from 'vitest';
import { AccountCache, RedisCreditState, type Hold, type PlanLimits } from '../../src/billing/index.js';
import { openStorage, type KeyRecord, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { deleteRedisKeys } from '../support/gateway.js';

const URL = 'redis://127.0.0.1:6379';
const limits: PlanLimits = { requestsPerMinute: 1000, tokensPerMinute: 1_000_000, dailyLimitNano: null };
let database: TestDatabase;
let storage: Storage;
const prefix = `tgtest:credits:${process.pid}:${Date.now()}:`;
const states: RedisCreditState[] = [];

afterEach(async () => {
  await Promise.all(states.splice(0).map((s) => s.close()));
  await storage?.close();
  await database?.drop();
  await deleteRedisKeys(URL, prefix);
});

async function setup(balanceNano: bigint) {
  database = await createTestDatabase('sqlite');
  storage = await openStorage({ dataDir: database.dataDir });
  await storage.ledger.createAccount({ id: 'acct_1', email: 'a@example.com', plan: 'free', settings: '{}', grantNano: balanceNano });
  await storage.keys.insert({
    id: 'key_1', accountId: 'acct_1', name: 'k', keyHash: 'h', hint: 'h', environment: 'live', permissions: 'full',
    models: [], spendLimitNano: null, createdAt: 1,
  });
  const key = (await storage.keys.get('key_1')) as KeyRecord;
  const account = (await new AccountCache(storage).get('acct_1'))!;
  const replica = (ownerTtlMs = 5_000) => {
    const state = new RedisCreditState({ url: URL, prefix, storage, ownerTtlMs });
    states.push(state);
    state.start();
    return state;
  };
  const hold = (id: string, amountNano: bigint): Hold => ({ id, requestId: `req_${id}`, account, key, amountNano });
  return { key, account, replica, hold };
}

describe('credit state in Redis', () => {
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
    const result = await storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -100n, requestId: 'req_written' }] });
    await dying.close();
    expect((await survivor.budgets(account, key, limits)).balanceAvailable).toBe(1_000n - 200n - 250n - 100n);

    await new Promise((r) => setTimeout(r, 400));
    expect(await survivor.sweep()).toBe(3);
    const after = result.balances.get('acct_1')!;
    expect(after.balanceNano).toBe(900n);
    // Everything held or pending is back; the balance the survivor sees is the database's.
    account.balanceNano = after.balanceNano;
    account.version = after.version;
    expect((await survivor.budgets(account, key, limits)).balanceAvailable).toBe(900n);
    expect(await survivor.sweep()).toBe(0);
  });
});
