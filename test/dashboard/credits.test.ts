/**
 * "Add credits" over the dashboard's JSON API: the same purchases as /v1/credits/purchases (rules, Stripe Checkout
 * through the local wire-format mock and the real SDK), reached with the session and CSRF token; and the text a
 * gateway without Stripe shows instead.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { DashboardClient, uniqueEmail } from './client.js';

describe('dashboard purchases with Stripe', () => {
  let stripe: MockStripe;
  let gateway: TestGateway;

  beforeAll(async () => {
    stripe = await startMockStripe();
    gateway = await startGateway({ env: stripe.env });
  });
  afterAll(async () => {
    await gateway?.close();
    await stripe?.close();
  });

  test('signed out or without the CSRF token nothing is bought', async () => {
    const anonymous = new DashboardClient(gateway.url);
    expect((await anonymous.request('GET', '/purchases')).status).toBe(401);
    expect((await anonymous.request('GET', '/purchasing')).status).toBe(401);
    const user = new DashboardClient(gateway.url);
    await user.signUp(uniqueEmail('buy-csrf'));
    const forged = await user.request('POST', '/purchases', { amount: 20 }, { 'x-csrf-token': 'wrong' });
    expect(forged.status).toBe(403);
    expect((await user.request('GET', '/purchases')).body.data).toEqual([]);
  });

  test(
    'add 20 USD: checkout URL, pending, paid once Stripe says so, balance and ledger, listed with the receipt',
    { timeout: 20_000 },
    async () => {
      const user = new DashboardClient(gateway.url);
      await user.signUp(uniqueEmail('buy'));
      expect((await user.request('GET', '/purchasing')).body).toEqual({
        object: 'purchasing',
        available: true,
        unavailable_reason: null,
        min_amount: 5,
        max_amount: 1000,
        currency: 'USD',
      });

      const tooSmall = await user.request('POST', '/purchases', { amount: 2 });
      expect(tooSmall.status).toBe(400);
      expect(tooSmall.body.error).toMatchObject({ param: 'amount', message: 'amount must be from 5 to 1000 USD' });
      expect((await user.request('POST', '/purchases', { amount: 20, extra: 1 })).body.error.param).toBe('extra');

      const created = await user.request('POST', '/purchases', { amount: 20 });
      expect(created.status).toBe(201);
      const purchase = created.body;
      expect(purchase).toMatchObject({
        object: 'credit_purchase',
        amount: 20,
        currency: 'USD',
        status: 'pending',
        receipt_url: null,
      });
      const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
      expect(purchase.checkout_url).toBe(session.url);
      expect(session.success_url).toBe(`${gateway.url}/dashboard/credits?purchase=${purchase.id}`);
      expect((await user.request('GET', `/purchases/${purchase.id}`)).body.status).toBe('pending');

      // Another user cannot see it.
      const other = new DashboardClient(gateway.url);
      await other.signUp(uniqueEmail('buy-other'));
      expect((await other.request('GET', `/purchases/${purchase.id}`)).status).toBe(404);
      expect((await other.request('GET', '/purchases')).body.data).toEqual([]);

      expect(
        (await stripe.deliver(gateway.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
      ).toBe(200);
      const paid = (await user.request('GET', `/purchases/${purchase.id}`)).body;
      expect(paid).toMatchObject({ id: purchase.id, status: 'paid', amount: 20 });
      expect(paid.receipt_url).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\//);
      expect((await user.request('GET', '/overview')).body.balance.credits).toBe(25);
      const topup = (await user.request('GET', '/ledger')).body.data.find((e: any) => e.kind === 'topup');
      expect(topup).toMatchObject({ amount: 20, balance_after: 25 });
      expect(topup.note).toMatch(new RegExp(`^Stripe payment pi_\\w+ \\(purchase ${purchase.id}\\)$`));

      const second = (await user.request('POST', '/purchases', { amount: 7.5 })).body;
      const first = await user.request('GET', '/purchases?limit=1');
      expect(first.body).toMatchObject({ object: 'list', has_more: true, next_before: second.id });
      expect(first.body.data.map((p: any) => p.id)).toEqual([second.id]);
      const next = await user.request('GET', `/purchases?limit=1&before=${second.id}`);
      expect(next.body).toMatchObject({ has_more: false, next_before: null });
      expect(next.body.data).toEqual([paid]);
      expect((await user.request('GET', '/purchases?limit=0')).body.error.param).toBe('limit');
    },
  );
});

describe('dashboard purchases without Stripe', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway?.close());

  test('purchasing is off, with the reason the API gives', async () => {
    const user = new DashboardClient(gateway.url);
    await user.signUp(uniqueEmail('buy-off'));
    const purchasing = (await user.request('GET', '/purchasing')).body;
    expect(purchasing).toMatchObject({ available: false, min_amount: 5, max_amount: 1000 });
    expect(purchasing.unavailable_reason).toMatch(/^Buying credit is not available on this gateway/);
    const refused = await user.request('POST', '/purchases', { amount: 20 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe(purchasing.unavailable_reason);
    expect((await user.request('GET', '/overview')).body.balance.credits).toBe(5);
  });
});
