/**
 * Auto-recharge adds credit only through a processor an operator put the account on (`invoice`, with a monthly
 * ceiling), within the configured maximum amount and number of recharges per day.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({ write: (chunk, _encoding, done) => void (logLines.push(String(chunk)), done()) });
  gateway = await startGateway({
    logger: pino({ level: 'warn' }, sink),
    overrides: { credits: { auto_recharge: { max_amount: 50, max_per_day: 2 } } },
  });
});
afterAll(async () => gateway?.close());

const patch = (id: string, body: unknown) => gateway.admin('PATCH', `/admin/accounts/${id}`, body);

async function recharges(id: string): Promise<Array<{ amount: number; note: string }>> {
  const ledger = (await gateway.admin('GET', `/admin/accounts/${id}/ledger`)).body.data as Array<{
    kind: string;
    amount: number;
    note: string;
  }>;
  return ledger.filter((e) => e.kind === 'recharge');
}

const ask = (account: { key: string }) =>
  gateway
    .client(account.key)
    .chat.completions.create({ model: 'sandbox/lorem', max_tokens: 5, messages: [{ role: 'user', content: 'spend' }] });

/** One request that leaves the balance below the threshold, then until its recharge has landed or been held back. */
async function spendOnce(account: { id: string; key: string }): Promise<void> {
  const before = (await recharges(account.id)).length;
  const heldBefore = heldBack(account.id).length;
  await ask(account);
  await expect
    .poll(async () => (await recharges(account.id)).length > before || heldBack(account.id).length > heldBefore, {
      timeout: 5000,
    })
    .toBe(true);
}

const heldBack = (accountId: string) =>
  logLines
    .map((line) => JSON.parse(line) as { msg: string; accountId?: string; reason?: string })
    .filter((l) => l.msg === 'auto-recharge held back by a limit' && l.accountId === accountId);

describe('invoice billing (operators only)', () => {
  it('recharges up to the monthly ceiling, then stops until the operator raises it', async () => {
    const account = await gateway.account();
    const invoiced = await patch(account.id, {
      billing: { processor: 'invoice', monthly_ceiling: 15 },
      auto_recharge: { enabled: true, threshold: 1000, amount: 10 },
    });
    expect(invoiced.status).toBe(200);
    expect(invoiced.body).toMatchObject({
      billing: { processor: 'invoice', monthly_ceiling: 15 },
      auto_recharge: { enabled: true, threshold: 1000, amount: 10 },
    });

    await spendOnce(account);
    await spendOnce(account);
    // Held back once, the account is not asked again (nor logged) until its settings or the day change.
    await ask(account);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heldBack(account.id)).toHaveLength(1);
    expect((await recharges(account.id)).map((r) => r.amount)).toEqual([10]);
    expect((await recharges(account.id))[0]!.note).toMatch(/^auto-recharge via invoice /);
    expect(heldBack(account.id)[0]!.reason).toMatch(/monthly ceiling of 15 USD/);

    await patch(account.id, { billing: { monthly_ceiling: 20 } });
    await spendOnce(account);
    expect((await recharges(account.id)).map((r) => r.amount)).toEqual([10, 10]);

    const credits = (await gateway.client(account.key).get('/credits')) as {
      billing: { auto_recharge: Record<string, unknown> };
    };
    expect(credits.billing.auto_recharge).toEqual({
      enabled: true,
      threshold: 1000,
      amount: 10,
      available: false,
      unavailable_reason: expect.stringMatching(/operator/),
      disabled_reason: null,
    });
  });

  it('recharges at most credits.auto_recharge.max_per_day times a day', async () => {
    const account = await gateway.account();
    await patch(account.id, {
      billing: { processor: 'invoice', monthly_ceiling: 1000 },
      auto_recharge: { enabled: true, threshold: 1000, amount: 1 },
    });
    for (let i = 0; i < 3; i++) await spendOnce(account);
    expect(await recharges(account.id)).toHaveLength(2);
    expect(heldBack(account.id)[0]!.reason).toMatch(/max_per_day/);
  });

  it('an amount over credits.auto_recharge.max_amount is a 400, and auto-recharge needs a processor on the account', async () => {
    const account = await gateway.account();
    const over = await patch(account.id, {
      billing: { processor: 'invoice', monthly_ceiling: 500 },
      auto_recharge: { enabled: true, threshold: 1, amount: 50.01 },
    });
    expect([over.status, over.body.error.code, over.body.error.param]).toEqual([
      400,
      'invalid_request',
      'auto_recharge.amount',
    ]);
    expect(over.body.error.message).toContain('50 USD');
    const atMax = await patch(account.id, {
      billing: { processor: 'invoice', monthly_ceiling: 500 },
      auto_recharge: { enabled: true, threshold: 1, amount: 50 },
    });
    expect(atMax.status).toBe(200);

    const off = await patch(account.id, { billing: null });
    expect(off.body).toMatchObject({ billing: null, auto_recharge: { enabled: false } });
    const noProcessor = await patch(account.id, { auto_recharge: { enabled: true } });
    expect([noProcessor.status, noProcessor.body.error.param]).toEqual([400, 'auto_recharge.enabled']);
    const noCeiling = await patch(account.id, { billing: { processor: 'invoice' } });
    expect([noCeiling.status, noCeiling.body.error.param]).toEqual([400, 'billing.monthly_ceiling']);
    const stripe = await patch(account.id, { billing: { processor: 'stripe', monthly_ceiling: 5 } });
    expect(stripe.status).toBe(400);
  });

  it("an account's own user can neither enable nor change invoice-billed auto-recharge, only turn it off", async () => {
    const user = new DashboardClient(gateway.url);
    const { body } = await user.signUp(uniqueEmail('invoiced'));
    await patch(body.account_id, {
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 1, amount: 10 },
    });
    const raise = await user.request('PATCH', '/settings', { auto_recharge: { amount: 50 } });
    expect([raise.status, raise.body.error.param]).toEqual([400, 'auto_recharge.amount']);
    expect(raise.body.error.message).toMatch(/operator/);
    const off = await user.request('PATCH', '/settings', { auto_recharge: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body.billing.auto_recharge).toMatchObject({ enabled: false, available: false });
    const on = await user.request('PATCH', '/settings', { auto_recharge: { enabled: true } });
    expect([on.status, on.body.error.param]).toEqual([400, 'auto_recharge.enabled']);
  });
});
