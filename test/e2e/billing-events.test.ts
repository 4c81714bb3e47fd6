/** Low-balance events (the contract's crossing rule) and auto-recharge through the built-in invoice processor. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryEventSink } from '../../src/events/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
const events = new MemoryEventSink();

beforeAll(async () => {
  gateway = await startGateway({ events });
});
afterAll(async () => gateway?.close());

const ask = (key: string) =>
  gateway.client(key).chat.completions.create({
    model: 'sandbox/lorem',
    max_tokens: 20,
    messages: [{ role: 'user', content: 'spend a little' }],
  });

describe('credit.low_balance', () => {
  it('fires once per crossing of a threshold and re-arms after a top-up', async () => {
    const account = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { low_balance_thresholds: [1] });
    await gateway.setBalance(account.id, 1.000001);
    const mine = () => events.events.filter((e) => e.accountId === account.id);

    await ask(account.key);
    expect(mine()).toHaveLength(1);
    expect(mine()[0]).toMatchObject({ type: 'credit.low_balance', thresholdNano: 1_000_000_000n });
    expect(mine()[0]!.balanceNano).toBeLessThan(1_000_000_000n);

    await ask(account.key);
    expect(mine()).toHaveLength(1);

    await gateway.setBalance(account.id, 1.000001);
    await ask(account.key);
    expect(mine()).toHaveLength(2);
  });
});

describe('auto-recharge', () => {
  it('recharges through the invoice processor when a debit leaves the balance below the threshold', async () => {
    const account = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${account.id}`, {
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 1, amount: 10 },
    });
    await gateway.setBalance(account.id, 1.000001);
    await ask(account.key);

    let balance = 0;
    for (let i = 0; i < 50 && balance < 10; i++) {
      balance = (await gateway.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits;
      if (balance < 10) await new Promise((r) => setTimeout(r, 20));
    }
    expect(balance).toBeGreaterThan(10);
    expect(balance).toBeLessThan(11);
    const ledger = (await gateway.admin('GET', `/admin/accounts/${account.id}/ledger`)).body.data as Array<{
      kind: string;
      amount: number;
      note: string;
    }>;
    const recharges = ledger.filter((e) => e.kind === 'recharge');
    expect(recharges).toHaveLength(1);
    expect(recharges[0]!.amount).toBe(10);
    expect(recharges[0]!.note).toMatch(/invoice/);

    const credits = await fetch(`${gateway.baseURL}/credits`, { headers: { authorization: `Bearer ${account.key}` } });
    expect(((await credits.json()) as any).billing.auto_recharge).toMatchObject({
      enabled: true,
      threshold: 1,
      amount: 10,
    });
  });
});
