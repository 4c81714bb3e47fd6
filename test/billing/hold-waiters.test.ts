import { describe, expect, it } from 'vitest';
import type { AccountState } from '../../src/billing/index.js';
import { HoldWaiters } from '../../src/billing/hold-waiters.js';
import { GatewayError } from '../../src/errors/index.js';

/** An account's cached state: waiters know an account by this object. */
function account(): AccountState {
  return {
    id: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    settings: { autoRecharge: { enabled: false, thresholdNano: 0n, amountNano: 0n } },
    balanceNano: 0n,
    version: 1n,
    reservedNano: 0n,
    pendingNano: 0n,
    day: '2026-11-27',
    dailySpentNano: 0n,
    dailyReservedNano: 0n,
    keySpend: new Map(),
    lastUsed: 0,
  };
}

describe('requests waiting for holds in flight', () => {
  it('wakes a waiter when a hold of its account ends, and only then', async () => {
    const waiters = new HoldWaiters({ maxWaitMs: 5_000, perAccount: 2 });
    const [mine, other] = [account(), account()];
    let woken = false;
    const waiting = waiters.wait(mine, waiters.mark(mine), Date.now() + 5_000).then((again) => (woken = again));
    waiters.ended(other);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(woken).toBe(false);
    waiters.ended(mine);
    expect(await waiting).toBe(true);
  });

  it('does not miss a hold that ended between reading the budgets and waiting', async () => {
    const waiters = new HoldWaiters({ maxWaitMs: 5_000, perAccount: 2 });
    const mine = account();
    const mark = waiters.mark(mine);
    waiters.ended(mine);
    const started = Date.now();
    expect(await waiters.wait(mine, mark, Date.now() + 5_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(50);
  });

  it('gives up at the deadline, refuses a waiter beyond the bound at once, and frees the place of one that leaves', async () => {
    const waiters = new HoldWaiters({ maxWaitMs: 5_000, perAccount: 1 });
    const mine = account();
    const started = Date.now();
    expect(await waiters.wait(mine, waiters.mark(mine), Date.now() + 100)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);

    const leaving = new AbortController();
    const first = waiters.wait(mine, waiters.mark(mine), Date.now() + 5_000, leaving.signal);
    expect(await waiters.wait(mine, waiters.mark(mine), Date.now() + 5_000)).toBe(false);
    leaving.abort();
    await expect(first).rejects.toBeInstanceOf(GatewayError);
    const second = waiters.wait(mine, waiters.mark(mine), Date.now() + 5_000);
    waiters.ended(mine);
    expect(await second).toBe(true);
  });

  it('looks again every pollMs where holds end out of sight (another replica)', async () => {
    const waiters = new HoldWaiters({ maxWaitMs: 5_000, perAccount: 1, pollMs: 50 });
    const mine = account();
    const started = Date.now();
    expect(await waiters.wait(mine, waiters.mark(mine), Date.now() + 5_000)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
