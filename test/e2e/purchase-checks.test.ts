/**
 * A purchase is credited even when Stripe's webhook is late or never comes: reading a pending purchase (the buyer's
 * return page does) and the periodic check of purchases pending for a while ask Stripe for the Checkout Session
 * (`GET /v1/checkout/sessions/{id}` on the local server speaking Stripe's wire format), and a paid one is credited
 * through the webhook's exactly-once path. Whatever comes first credits; the rest move no money, on both databases.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiCall } from '../support/admin-call.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';

const call = (gw: TestGateway, key: string, method: string, path: string, body?: unknown) =>
  apiCall(gw.url, key, method, path, body);
const balance = async (gw: TestGateway, key: string) =>
  (await call(gw, key, 'GET', '/v1/credits')).body.balance.credits as number;
const topups = async (gw: TestGateway, accountId: string) =>
  ((await gw.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[]).filter((e) => e.kind === 'topup');

async function buy(gw: TestGateway, stripe: MockStripe, key: string, amount: number) {
  const created = await call(gw, key, 'POST', '/v1/credits/purchases', { amount });
  expect(created.status).toBe(201);
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === created.body.id)!;
  return { purchase: created.body, session };
}

const sessionReads = (stripe: MockStripe, sessionId: string) =>
  stripe.calls.filter((c) => c.method === 'GET' && c.path === `/v1/checkout/sessions/${sessionId}`).length;

describeEach(DIALECTS)('purchases whose webhook is late or missing (%s)', (dialect) => {
  let stripe: MockStripe;
  let gw: TestGateway;

  beforeAll(async () => {
    stripe = await startMockStripe();
    // The periodic check is left to its defaults here (after 5 minutes): only reads ask Stripe.
    gw = await startGateway({ dialect, env: stripe.env });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  it('the buyer back from Checkout sees the purchase paid and credited once; the late webhook then moves nothing', async () => {
    const { id: accountId, key } = await gw.account();
    const { purchase, session } = await buy(gw, stripe, key, 20);
    const paid = stripe.pay(session.id);

    const [first, second] = await Promise.all([
      call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`),
      call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect([first.body.status, second.body.status]).toContain('paid');
    // The receipt link is kept right after the credit.
    const shown = (await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body;
    expect(shown).toMatchObject({ id: purchase.id, status: 'paid', amount: 20 });
    expect(shown.receipt_url).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\//);
    expect(sessionReads(stripe, session.id)).toBeGreaterThanOrEqual(1);
    expect(await balance(gw, key)).toBe(25);
    const credited = await topups(gw, accountId);
    expect(credited.map((e) => e.amount)).toEqual([20]);
    expect(credited[0].note).toContain(paid.payment_intent);
    expect(await gw.app.storage.purchases.customer(accountId)).toMatchObject({
      customerId: paid.customer,
      paymentMethodId: expect.stringMatching(/^pm_/),
    });

    for (const type of ['checkout.session.completed', 'checkout.session.async_payment_succeeded']) {
      const late = await stripe.deliver(gw.url, stripe.event(type, paid));
      expect(late.status).toBe(200);
    }
    expect(await balance(gw, key)).toBe(25);
    expect(await topups(gw, accountId)).toHaveLength(1);
    expect(await gw.app.storage.ledger.sum(accountId)).toBe(25_000_000_000n);
  });

  it('the webhook first, then the return: one credit, and a paid purchase is not asked of Stripe again', async () => {
    const { id: accountId, key } = await gw.account();
    const { purchase, session } = await buy(gw, stripe, key, 30);
    const paid = stripe.pay(session.id);
    const event = stripe.event('checkout.session.completed', paid);
    // Delivery and reads at once, in any order.
    await Promise.all([
      stripe.deliver(gw.url, event),
      call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`),
      stripe.deliver(gw.url, event),
    ]);
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body.status).toBe('paid');
    const asked = sessionReads(stripe, session.id);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body.status).toBe('paid');
    expect(sessionReads(stripe, session.id)).toBe(asked);
    expect(await balance(gw, key)).toBe(35);
    expect((await topups(gw, accountId)).map((e) => e.amount)).toEqual([30]);
  });

  it('an unpaid session stays pending and an expired one becomes expired: nothing credited', async () => {
    const { id: accountId, key } = await gw.account();
    const open = await buy(gw, stripe, key, 10);
    const unpaid = await call(gw, key, 'GET', `/v1/credits/purchases/${open.purchase.id}`);
    expect(unpaid.body.status).toBe('pending');
    expect(sessionReads(stripe, open.session.id)).toBe(1);

    const lapsed = await buy(gw, stripe, key, 10);
    stripe.expire(lapsed.session.id);
    const expired = await call(gw, key, 'GET', `/v1/credits/purchases/${lapsed.purchase.id}`);
    expect(expired.body.status).toBe('expired');

    // Completed but not paid yet (a delayed payment method): still pending.
    const delayed = await buy(gw, stripe, key, 10);
    Object.assign(stripe.sessions.get(delayed.session.id)!, { status: 'complete', payment_status: 'unpaid' });
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${delayed.purchase.id}`)).body.status).toBe('pending');

    expect(await balance(gw, key)).toBe(5);
    expect(await topups(gw, accountId)).toHaveLength(0);
  });

  it("a session that does not match its purchase's amount credits nothing", async () => {
    const { id: accountId, key } = await gw.account();
    const { purchase, session } = await buy(gw, stripe, key, 20);
    stripe.pay(session.id);
    stripe.sessions.get(session.id)!.amount_total = 200;
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`)).body.status).toBe('pending');
    expect(await topups(gw, accountId)).toHaveLength(0);
  });

  it("the dashboard's return page reads the purchase the same way", async () => {
    const client = new DashboardClient(gw.url);
    expect((await client.signUp(uniqueEmail('return'))).status).toBe(201);
    const bought = await client.request('POST', '/purchases', { amount: 20 });
    expect(bought.status).toBe(201);
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === bought.body.id)!;
    stripe.pay(session.id);
    const back = await client.request('GET', `/purchases/${bought.body.id}`);
    expect(back.body).toMatchObject({ id: bought.body.id, status: 'paid' });
    expect((await client.request('GET', '/overview')).body.balance.credits).toBe(25);
  });

  it('Stripe unreachable: the read answers the purchase as stored, pending', async () => {
    const { key } = await gw.account();
    const { purchase, session } = await buy(gw, stripe, key, 20);
    stripe.pay(session.id);
    stripe.sessions.delete(session.id);
    const shown = await call(gw, key, 'GET', `/v1/credits/purchases/${purchase.id}`);
    expect([shown.status, shown.body.status]).toEqual([200, 'pending']);
  });
});

describeEach(DIALECTS)('the periodic check of pending purchases (%s)', (dialect) => {
  let stripe: MockStripe;
  let gw: TestGateway;

  beforeAll(async () => {
    stripe = await startMockStripe();
    gw = await startGateway({
      dialect,
      env: stripe.env,
      overrides: { payments: { purchase: { pending_check_after_seconds: 1, pending_check_interval_seconds: 1 } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  it('credits a paid purchase whose buyer never came back and whose webhook never came, once', async () => {
    const { id: accountId, key } = await gw.account();
    const { session } = await buy(gw, stripe, key, 20);
    const unpaid = await buy(gw, stripe, key, 40);
    stripe.pay(session.id);
    await expect.poll(() => balance(gw, key), { timeout: 15_000, interval: 200 }).toBe(25);
    // More runs of the check, and the late webhook: nothing more.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(
      (await stripe.deliver(gw.url, stripe.event('checkout.session.completed', stripe.sessions.get(session.id)!)))
        .status,
    ).toBe(200);
    expect(await balance(gw, key)).toBe(25);
    expect((await topups(gw, accountId)).map((e) => e.amount)).toEqual([20]);
    expect(sessionReads(stripe, unpaid.session.id)).toBeGreaterThanOrEqual(1);
    expect((await call(gw, key, 'GET', `/v1/credits/purchases/${unpaid.purchase.id}`)).body.status).toBe('pending');
  });
});
