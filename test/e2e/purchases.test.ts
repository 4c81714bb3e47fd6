/**
 * Buying credit through Stripe Checkout, end to end on the real gateway and both databases, with the real `stripe`
 * SDK talking to a local server that speaks Stripe's wire format, and webhook deliveries signed as Stripe signs them.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { MOCK_WEBHOOK_SECRET, startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { describeEach } from '../support/backends.js';
import { apiCall } from '../support/admin-call.js';

const call = (gw: TestGateway, key: string, method: string, path: string, body?: unknown) =>
  apiCall(gw.url, key, method, path, body);

const deliver = (gw: TestGateway, stripe: MockStripe, event: unknown, signature?: string | null) =>
  stripe.deliver(gw.url, event, signature);

const balance = async (gw: TestGateway, key: string) =>
  (await call(gw, key, 'GET', '/v1/credits')).body.balance.credits as number;
const ledger = async (gw: TestGateway, accountId: string) =>
  (await gw.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[];

function shuffled<T>(items: T[]): T[] {
  return items
    .map((item) => ({ item, order: Math.random() }))
    .sort((a, b) => a.order - b.order)
    .map(({ item }) => item);
}

describeEach(DIALECTS)('credit purchases through Stripe (%s)', (dialect) => {
  let stripe: MockStripe;
  let gw: TestGateway;

  beforeAll(async () => {
    stripe = await startMockStripe();
    gw = await startGateway({ dialect, env: stripe.env });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  it('buys 20 USD: pending with the checkout URL Stripe issued, then paid and credited exactly once however Stripe delivers', async () => {
    const { id: accountId, key } = await gw.account();
    const created = await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 20 });
    expect(created.status).toBe(201);
    const purchase = created.body;
    expect(purchase).toMatchObject({ object: 'credit_purchase', amount: 20, currency: 'USD', status: 'pending' });
    expect(purchase.id).toMatch(/^cp_/);
    expect(Number.isInteger(purchase.created)).toBe(true);

    const sessionCall = stripe.calls.find(
      (c) => c.path === '/v1/checkout/sessions' && c.params.client_reference_id === purchase.id,
    )!;
    const session = stripe.sessions.get(
      [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!.id,
    )!;
    expect(purchase.checkout_url).toBe(session.url);
    expect(sessionCall.params).toMatchObject({
      mode: 'payment',
      metadata: { purchase_id: purchase.id },
      payment_intent_data: { setup_future_usage: 'off_session' },
      line_items: [{ quantity: '1', price_data: { currency: 'usd', unit_amount: '2000' } }],
    });
    expect(sessionCall.params.success_url).toContain(`/dashboard/credits?purchase=${purchase.id}`);
    expect(stripe.customers.has(sessionCall.params.customer)).toBe(true);
    expect(await balance(gw, key)).toBe(5);

    const paid = stripe.pay(session.id);
    const completed = stripe.event('checkout.session.completed', paid);
    const succeeded = stripe.event('checkout.session.async_payment_succeeded', paid);
    const answers = await Promise.all(
      shuffled([completed, completed, completed, succeeded]).map((event) => deliver(gw, stripe, event)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    // Stripe delivers again later: still nothing more.
    expect((await deliver(gw, stripe, completed)).status).toBe(200);

    const shown = await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`);
    expect(shown.body).toMatchObject({ id: purchase.id, status: 'paid', amount: 20 });
    expect(shown.body.receipt_url).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\//);
    expect(Number.isInteger(shown.body.paid_at)).toBe(true);
    expect(await balance(gw, key)).toBe(25);
    const topups = (await ledger(gw, accountId)).filter((e) => e.kind === 'topup');
    expect(topups).toHaveLength(1);
    expect(topups[0].amount).toBe(20);
    expect(topups[0].note).toContain(paid.payment_intent);
    expect(await gw.app.storage.ledger.sum(accountId)).toBe(25_000_000_000n);
    // Both forms match the OpenAPI document the gateway serves.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema((await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as object, 'openapi.json');
    const matches = ajv.getSchema('openapi.json#/components/schemas/CreditPurchase')!;
    for (const shape of [purchase, shown.body, ...(await call(gw, key, 'GET', '/v1/credits/purchases')).body.data])
      expect(matches(shape), JSON.stringify(matches.errors)).toBe(true);
    expect(await gw.app.storage.purchases.customer(accountId)).toEqual({
      processor: 'stripe',
      customerId: paid.customer,
      paymentMethodId: expect.stringMatching(/^pm_/),
    });
  });

  it('a forged or missing signature is refused with 400 and changes nothing', async () => {
    const { id: accountId, key } = await gw.account();
    const purchase = (await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 50 })).body;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    const event = stripe.event('checkout.session.completed', stripe.pay(session.id));
    const payload = JSON.stringify(event);

    const forged = await deliver(gw, stripe, event, stripe.sign(payload, 'whsec_someone_else'));
    expect(forged.status).toBe(400);
    expect(forged.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
    expect((await deliver(gw, stripe, event, null)).status).toBe(400);
    // Signed for another body.
    expect((await deliver(gw, stripe, { ...event, id: 'evt_other' }, stripe.sign(payload))).status).toBe(400);

    // Read from storage: reading it through the API would ask Stripe, which says the session is paid.
    expect((await gw.app.storage.purchases.get(purchase.id))!.status).toBe('pending');
    expect(await balance(gw, key)).toBe(5);
    expect((await ledger(gw, accountId)).filter((e) => e.kind === 'topup')).toHaveLength(0);
  });

  it('acknowledges event types it does not act on, and a session that is not paid yet credits nothing', async () => {
    const { key } = await gw.account();
    const purchase = (await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 5 })).body;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    expect(
      (await deliver(gw, stripe, stripe.event('customer.created', { id: 'cus_x', object: 'customer' }))).status,
    ).toBe(200);
    const unpaid = { ...session, status: 'complete', payment_status: 'unpaid' };
    expect((await deliver(gw, stripe, stripe.event('checkout.session.completed', unpaid))).status).toBe(200);
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body.status).toBe('pending');
    expect(await balance(gw, key)).toBe(5);
    expect(
      (await deliver(gw, stripe, stripe.event('checkout.session.expired', { ...session, status: 'expired' }))).status,
    ).toBe(200);
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body.status).toBe('expired');
  });

  it('refuses amounts outside the configured bounds, naming amount', async () => {
    const { key } = await gw.account();
    for (const amount of [4.99, 1000.01, 0, -20, 20.005, '20', null]) {
      const answer = await call(gw, key, 'POST', '/v1/credits/purchases', { amount });
      expect(answer.status, JSON.stringify(amount)).toBe(400);
      expect(answer.body.error.param).toBe('amount');
    }
    expect((await call(gw, key, 'POST', '/v1/credits/purchases', {})).body.error.param).toBe('amount');
    expect((await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 1000 })).status).toBe(201);
  });

  it('lists an account own purchases newest first, page by page; another account sees none of them', async () => {
    const { key } = await gw.account();
    const ids: string[] = [];
    for (const amount of [5, 6, 7])
      ids.push((await call(gw, key, 'POST', '/v1/credits/purchases', { amount })).body.id);
    const all = await call(gw, key, 'GET', '/v1/credits/purchases');
    expect(all.body.object).toBe('list');
    expect(all.body.data.map((p: any) => p.id)).toEqual([...ids].reverse());
    const first = await call(gw, key, 'GET', '/v1/credits/purchases?limit=2');
    expect(first.body.data.map((p: any) => p.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.has_more).toBe(true);
    const second = await call(gw, key, 'GET', `/v1/credits/purchases?limit=2&before=${ids[1]}`);
    expect(second.body.data.map((p: any) => p.id)).toEqual([ids[0]]);

    const other = await gw.account();
    expect((await call(gw, other.key, 'GET', '/v1/credits/purchases')).body.data).toEqual([]);
    const foreign = await call(gw, other.key, 'GET', `/v1/credits/purchases/${ids[0]}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
  });

  it('only full keys buy or see purchases: project and read-only keys get 403', async () => {
    const { id } = await gw.account();
    for (const permissions of ['project', 'read_only']) {
      const { key } = await gw.key(id, { permissions });
      const bought = await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 20 });
      expect(bought.status).toBe(403);
      expect(bought.body.error.code).toBe('permission_denied');
      expect((await call(gw, key, 'GET', '/v1/credits/purchases')).status).toBe(403);
    }
  });
});

describe('credit purchases without STRIPE_SECRET_KEY', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('are off and say so; the rest works as before', async () => {
    const { key } = await gw.account();
    const bought = await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 20 });
    expect(bought.status).toBe(400);
    expect(bought.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(bought.body.error.message).toContain('STRIPE_SECRET_KEY');
    expect((await call(gw, key, 'GET', '/v1/credits/purchases')).body).toEqual({
      object: 'list',
      data: [],
      has_more: false,
    });
    expect((await call(gw, key, 'GET', '/v1/credits')).status).toBe(200);
    const hook = await fetch(`${gw.url}/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(hook.status).toBe(400);
  });
});

describe('credit purchases when Stripe refuses the call', () => {
  let stripe: MockStripe;
  let gw: TestGateway;
  beforeAll(async () => {
    stripe = await startMockStripe();
    gw = await startGateway({
      env: {
        STRIPE_SECRET_KEY: 'sk_test_revoked_key',
        STRIPE_WEBHOOK_SECRET: MOCK_WEBHOOK_SECRET,
        STRIPE_API_BASE: stripe.url,
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  it('answers 502 and keeps the purchase as failed, with no checkout and no credit', async () => {
    const { key } = await gw.account();
    const bought = await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 20 });
    expect(bought.status).toBe(502);
    expect(bought.body.error.code).toBe('upstream_error');
    expect(bought.body.error.message).not.toContain('sk_test');
    const [purchase] = (await call(gw, key, 'GET', '/v1/credits/purchases')).body.data;
    expect(purchase).toMatchObject({ amount: 20, status: 'failed', checkout_url: null });
    expect(await balance(gw, key)).toBe(5);
  });
});
