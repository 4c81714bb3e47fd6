/**
 * Money changes in the audit log, end to end through the local Stripe server (the real `stripe` SDK): the sign-up
 * grant (`credits.grant`), a purchase paid (`payment.purchase`), its refunds and disputes (`payment.reversal`), and
 * auto-recharges by card and by invoice (`payment.recharge`), each once however often Stripe delivers; and the
 * dashboard's webhook changes, by the signed-in user, never showing the secret. On SQLite, and on PostgreSQL with
 * Redis.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { apiCall } from '../support/admin-call.js';
import { describeEach } from '../support/backends.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { TEST_WEBHOOKS } from '../webhooks/receiver-server.js';

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL and Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:audit-pay:${process.pid}:${Date.now()}:` },
  },
];

const SECRET = 'a-very-secret-webhook-secret-of-40-chars!';

interface User {
  id: string;
  key: string;
  email: string;
  dashboard: DashboardClient;
}

describeEach(CONFIGURATIONS)('money changes in the audit log on $name', ({ dialect, env }) => {
  let stripe: MockStripe;
  let gw: TestGateway;

  beforeAll(async () => {
    stripe = await startMockStripe();
    gw = await startGateway({ dialect, env: { ...env, ...stripe.env }, overrides: { webhooks: TEST_WEBHOOKS } });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  const call = (key: string, method: string, path: string, body?: unknown) =>
    apiCall(gw.baseURL, key, method, path, body);
  /** The account's entries of `action`, newest first, as GET /v1/audit shows them. */
  async function audit(key: string, action: string): Promise<any[]> {
    const answer = await call(key, 'GET', `/audit?action=${action}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.data;
  }
  const deliverAll = (events: unknown[]) => Promise.all(events.map((event) => stripe.deliver(gw.url, event)));

  async function signedUp(tag: string): Promise<User> {
    const dashboard = new DashboardClient(gw.url);
    const email = uniqueEmail(tag);
    const { status, body } = await dashboard.signUp(email);
    expect(status, JSON.stringify(body)).toBe(201);
    return { id: body.account_id, key: body.first_key.key, email, dashboard };
  }

  /** A purchase of `amount` USD paid at Checkout; its event is delivered three times at once and once more. */
  async function paidPurchase(account: { key: string }, amount: number) {
    const purchase = (await call(account.key, 'POST', '/credits/purchases', { amount })).body;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    const event = stripe.event('checkout.session.completed', stripe.pay(session.id));
    const answers = await deliverAll([event, event, event]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await stripe.deliver(gw.url, event)).body).toMatchObject({ received: true });
    const intentId = stripe.sessions.get(session.id)!.payment_intent as string;
    return { purchaseId: purchase.id as string, intentId, eventId: event.id as string };
  }

  it("records the sign-up grant as tollgate's credits.grant, once, whether the user or the operator opened the account", async () => {
    const user = await signedUp('audit-grant');
    const operatorMade = await gw.account();
    for (const account of [user, operatorMade]) {
      const entries = await audit(account.key, 'credits.grant');
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        actor: { type: 'system', id: null, email: null },
        target: { type: 'account', id: account.id },
        before: null,
        after: { kind: 'grant', amount: '5', note: 'sign-up credit' },
        ip: null,
      });
    }
  });

  it('records a purchase paid as payment.purchase by Stripe, once however often its event comes', async () => {
    const account = await gw.account();
    const { purchaseId, intentId, eventId } = await paidPurchase(account, 20);
    const entries = await audit(account.key, 'payment.purchase');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { type: 'processor', id: 'stripe', email: null },
      target: { type: 'purchase', id: purchaseId },
      after: { amount: '20', payment: intentId, event: eventId },
    });
  });

  it('records each refund and dispute that changes something as payment.reversal; repeated and stale deliveries add none', async () => {
    const account = await gw.account();
    const { purchaseId, intentId } = await paidPurchase(account, 20);
    const charge = stripe.charges.get(stripe.intents.get(intentId)!.charge.id)!;
    const refunded = (cents: number) => stripe.event('charge.refunded', { ...charge, amount_refunded: cents });
    const five = refunded(500);
    await deliverAll([five, five]);
    await stripe.deliver(gw.url, refunded(1300));
    await stripe.deliver(gw.url, five);
    let entries = await audit(account.key, 'payment.reversal');
    expect(entries.map((e) => e.after)).toEqual([
      { kind: 'refund', total: '13', final: false, payment: intentId, charge: charge.id },
      { kind: 'refund', total: '5', final: false, payment: intentId, charge: charge.id },
    ]);
    for (const entry of entries)
      expect(entry).toMatchObject({
        actor: { type: 'processor', id: 'stripe' },
        target: { type: 'purchase', id: purchaseId },
      });

    // The operator refunds the rest (Stripe holds the 13 USD refunded so far): the entry names the operator; Stripe's
    // own event for it adds none.
    charge.amount_refunded = 1300;
    const rest = await gw.admin('POST', `/admin/accounts/${account.id}/purchases/${purchaseId}/refund`);
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    await stripe.deliver(gw.url, refunded(2000));
    entries = await audit(account.key, 'payment.reversal');
    expect(entries).toHaveLength(3);
    expect(entries[0]).toMatchObject({
      actor: { type: 'operator', id: null },
      ip: '127.0.0.1',
      after: { kind: 'refund', total: '20', payment: intentId },
    });

    const disputed = await gw.account();
    const second = await paidPurchase(disputed, 20);
    const opened = stripe.event('charge.dispute.created', stripe.dispute(second.intentId, 'needs_response'));
    await deliverAll([opened, opened]);
    await stripe.deliver(gw.url, stripe.event('charge.dispute.closed', stripe.dispute(second.intentId, 'won')));
    await stripe.deliver(gw.url, opened);
    const disputes = await audit(disputed.key, 'payment.reversal');
    const disputeId = stripe.dispute(second.intentId, 'won').id;
    expect(disputes.map((e) => e.after)).toEqual([
      { kind: 'dispute', total: '0', final: true, payment: second.intentId, dispute: disputeId, status: 'won' },
      {
        kind: 'dispute',
        total: '20',
        final: false,
        payment: second.intentId,
        dispute: disputeId,
        status: 'needs_response',
      },
    ]);
  });

  it("records a card auto-recharge as tollgate's payment.recharge, once, with the payment and never the card", async () => {
    const user = await signedUp('audit-recharge');
    await paidPurchase(user, 20);
    const enabled = await user.dashboard.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 25, amount: 10 },
    });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    const spent = await call(user.key, 'POST', '/chat/completions', {
      model: 'sandbox/lorem',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'spend' }],
    });
    expect(spent.status).toBe(200);
    await expect.poll(async () => (await audit(user.key, 'payment.recharge')).length, { timeout: 5000 }).toBe(1);

    const intent = [...stripe.intents.values()].find((i) => i.metadata?.account_id === user.id)!;
    const [entry] = await audit(user.key, 'payment.recharge');
    expect(entry).toMatchObject({
      actor: { type: 'system', id: null, email: null },
      target: { type: 'recharge', id: intent.metadata.recharge_id },
      after: { amount: '10', processor: 'stripe', payment: intent.id },
    });
    expect(JSON.stringify(entry)).not.toContain(intent.payment_method);
    expect(JSON.stringify(entry)).not.toContain(intent.customer);

    // Stripe's event for the payment the answer already credited, delivered twice: no second entry.
    const { charge: _charge, ...succeeded } = intent;
    await deliverAll([1, 2].map(() => stripe.event('payment_intent.succeeded', succeeded)));
    expect(await audit(user.key, 'payment.recharge')).toHaveLength(1);
  });

  it('records an invoiced auto-recharge as payment.recharge with its invoice line', async () => {
    const account = await gw.account();
    const invoiced = await gw.admin('PATCH', `/admin/accounts/${account.id}`, {
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 1000, amount: 10 },
    });
    expect(invoiced.status, JSON.stringify(invoiced.body)).toBe(200);
    await gw
      .client(account.key)
      .chat.completions.create({ model: 'sandbox/lorem', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    await expect.poll(async () => (await audit(account.key, 'payment.recharge')).length, { timeout: 5000 }).toBe(1);
    const [entry] = await audit(account.key, 'payment.recharge');
    expect(entry).toMatchObject({
      actor: { type: 'system', id: null },
      target: { type: 'account', id: account.id },
      after: { amount: '10', processor: 'invoice', payment: expect.stringMatching(/^invline_/) },
    });
  });

  it("records the dashboard's webhook create, update and delete by the signed-in user, never the secret", async () => {
    const owner = await signedUp('audit-hooks');
    const made = await owner.dashboard.request('POST', '/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      secret: SECRET,
      events: [{ type: 'llm.completion' }],
      description: 'first',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const id = made.body.id;
    const changed = await owner.dashboard.request('PATCH', `/webhooks/${id}`, { description: 'second' });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toMatchObject({ id, description: 'second' });
    expect(JSON.stringify(changed.body)).not.toContain(SECRET);
    expect((await owner.dashboard.request('DELETE', `/webhooks/${id}`)).status).toBe(200);

    const page = await owner.dashboard.request('GET', '/audit?action=webhook.');
    expect(page.status).toBe(200);
    expect(page.body.data.map((e: any) => e.action)).toEqual(['webhook.delete', 'webhook.update', 'webhook.create']);
    for (const entry of page.body.data) {
      expect(entry).toMatchObject({
        actor: { type: 'user', id: expect.stringMatching(/^usr_/), email: owner.email },
        target: { type: 'webhook', id },
        ip: '127.0.0.1',
      });
      expect(JSON.stringify(entry)).not.toContain(SECRET);
    }
    const [deleted, updated, created] = page.body.data;
    expect(created).toMatchObject({ before: null, after: { description: 'first', url: 'http://127.0.0.1:9/hook' } });
    expect(updated).toMatchObject({ before: { description: 'first' }, after: { description: 'second' } });
    expect(deleted).toMatchObject({ before: { description: 'second' }, after: null });
    expect(await audit(owner.key, 'webhook.')).toEqual(page.body.data);
  });
});
