import { describe, expect, it } from 'vitest';
import { MemoryCreditState, capCharge, type AccountState, type Hold } from '../../src/billing/index.js';
import { fakeKey } from '../gateway/fakes.js';

const key = fakeKey({ name: 'key', hint: 'tg-live-…' });
const limits = { requestsPerMinute: 1, tokensPerMinute: 1, dailyLimitNano: null };

function account(balanceNano: bigint): AccountState {
  return {
    id: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    settings: { autoRecharge: { enabled: false, thresholdNano: 0n, amountNano: 0n } },
    balanceNano,
    version: 1n,
    reservedNano: 0n,
    pendingNano: 0n,
    day: '2026-11-22',
    dailySpentNano: 0n,
    dailyReservedNano: 0n,
    keySpend: new Map(),
    lastUsed: 0,
  };
}

describe('credit state in memory', () => {
  it('lets only one of two concurrent holds take the last of the balance', async () => {
    const state = new MemoryCreditState();
    const owner = account(1_000n);
    const hold = (id: string): Hold => ({ requestId: id, account: owner, key, amountNano: 800n });
    const results = await Promise.all([state.take(hold('a'), limits), state.take(hold('b'), limits)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(owner.reservedNano).toBe(800n);
  });

  it('charges in full within the hold and caps only the excess at what is free', () => {
    expect(capCharge(500n, 800n, 0n)).toBe(500n);
    expect(capCharge(900n, 800n, 850n)).toBe(850n);
    expect(capCharge(900n, 800n, 100n)).toBe(800n);
    expect(capCharge(900n, 800n, 2_000n)).toBe(900n);
  });
});
