/**
 * Auto-recharge amounts are whole cents, as cards and invoices are charged: the settings refuse any other amount
 * (400 naming the field), and a card recharge credits exactly what Stripe charged, even for an amount stored with
 * more decimals before they were refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { apiCall } from '../support/admin-call.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';

let stripe: MockStripe;
let gw: TestGateway;

beforeAll(async () => {
  stripe = await startMockStripe();
  gw = await startGateway({ env: stripe.env });
});
afterAll(async () => {
  await gw?.close();
  await stripe?.close();
});

/** A dashboard user whose card is saved by a paid 20 USD purchase (25 USD with the sign-up credit). */
async function userWithCard() {
  const dashboard = new DashboardClient(gw.url);
  const { body } = await dashboard.signUp(uniqueEmail('cents'));
  const user = { id: body.account_id as string, key: body.first_key.key as string, dashboard };
  const purchase = (await apiCall(gw.url, user.key, 'POST', '/v1/credits/purchases', { amount: 20 })).body;
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
  await stripe.deliver(gw.url, stripe.event('checkout.session.completed', stripe.pay(session.id)));
  expect((await gw.app.storage.purchases.customer(user.id))?.paymentMethodId).toMatch(/^pm_/);
  return user;
}

const ledger = async (accountId: string) =>
  (await gw.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`)).body.data as any[];

describe('auto-recharge in whole cents', () => {
  it('an amount that is not whole cents is a 400 naming auto_recharge.amount, from the operator and the user', async () => {
    const account = await gw.account();
    for (const amount of [0.509999999, 10.001, 0.5099]) {
      const answer = await gw.admin('PATCH', `/admin/accounts/${account.id}`, {
        billing: { processor: 'invoice', monthly_ceiling: 100 },
        auto_recharge: { enabled: true, threshold: 5, amount },
      });
      expect(answer.status, String(amount)).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_request',
        param: 'auto_recharge.amount',
        message: expect.stringMatching(/whole cents/),
      });
    }
    const whole = await gw.admin('PATCH', `/admin/accounts/${account.id}`, {
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 5, amount: 10.01 },
    });
    expect(whole.status).toBe(200);
    expect(whole.body.auto_recharge).toMatchObject({ amount: 10.01 });

    const user = await userWithCard();
    const own = await user.dashboard.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 30, amount: 0.509999999 },
    });
    expect(own.status).toBe(400);
    expect(own.body.error).toMatchObject({ code: 'invalid_request', param: 'auto_recharge.amount' });
  });

  it('a card recharge of an amount stored with more decimals charges whole cents and credits exactly that', async () => {
    const user = await userWithCard();
    const set = await user.dashboard.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 30, amount: 1 },
    });
    expect(set.status).toBe(200);
    // An amount stored before such amounts were refused.
    const account = (await gw.app.storage.accounts.get(user.id))!;
    await gw.app.storage.accounts.update(user.id, {
      settings: { ...account.settings, autoRecharge: { ...account.settings.autoRecharge, amountNano: 509_999_999n } },
    });
    // Any change through the admin API makes every cache reload the account.
    expect((await gw.admin('PATCH', `/admin/accounts/${user.id}`, { requests_per_minute: 600 })).status).toBe(200);

    const before = BigInt(
      Math.round((await apiCall(gw.url, user.key, 'GET', '/v1/credits')).body.balance.credits * 1e9),
    );
    const spent = await apiCall(gw.url, user.key, 'POST', '/v1/chat/completions', {
      model: 'sandbox/lorem',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'spend' }],
    });
    expect(spent.status).toBe(200);
    await expect.poll(async () => (await ledger(user.id)).filter((e) => e.kind === 'recharge').length).toBe(1);

    const charges = stripe.calls.filter(
      (c) => c.path === '/v1/payment_intents' && c.params.metadata?.account_id === user.id,
    );
    expect(charges.map((c) => c.params.amount)).toEqual(['50']);
    const entries = await ledger(user.id);
    expect(entries.filter((e) => e.kind === 'recharge').map((e) => e.amount)).toEqual([0.5]);
    const debited = entries.filter((e) => e.kind === 'debit').reduce((sum, e) => sum + Math.round(e.amount * 1e9), 0);
    const after = BigInt(
      Math.round((await apiCall(gw.url, user.key, 'GET', '/v1/credits')).body.balance.credits * 1e9),
    );
    expect(after - before).toBe(500_000_000n + BigInt(debited));
  });
});
