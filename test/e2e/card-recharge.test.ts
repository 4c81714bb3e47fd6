/**
 * Auto-recharge by saved card, end to end on the real gateway and both databases: the card is saved by a Checkout
 * purchase, a recharge is an off-session PaymentIntent at a local server speaking Stripe's wire format (real
 * `stripe` SDK), credited once when Stripe says it succeeded; declines send `credit.recharge_failed` to the
 * account's webhooks and three in a row turn auto-recharge off. Two gateways on one PostgreSQL charge once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { DIALECTS, tempDir } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { startReceiver, type Receiver } from '../webhooks/receiver-server.js';

const WEBHOOKS = { allow_private_urls: true, poll_interval_ms: 50, refresh_ms: 200 };

interface User {
  id: string;
  key: string;
  dashboard: DashboardClient;
}

async function call(base: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const credits = async (gw: TestGateway, key: string) => (await call(gw.url, key, 'GET', '/v1/credits')).body;
const recharges = async (gw: TestGateway, accountId: string) =>
  ((await gw.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[]).filter((e) => e.kind === 'recharge');
const intentCalls = (stripe: MockStripe, accountId: string) => stripe.calls.filter((c) => c.path === '/v1/payment_intents' && c.params.metadata?.account_id === accountId);

async function spend(base: string, key: string): Promise<void> {
  const answer = await call(base, key, 'POST', '/v1/chat/completions', { model: 'sandbox/lorem', max_tokens: 5, messages: [{ role: 'user', content: 'spend' }] });
  expect(answer.status).toBe(200);
}

/** A dashboard user whose card is saved: a 20 USD purchase paid at Checkout and confirmed by Stripe's event. */
async function userWithCard(gw: TestGateway, stripe: MockStripe): Promise<User> {
  const user = await signedUp(gw);
  const purchase = (await call(gw.url, user.key, 'POST', '/v1/credits/purchases', { amount: 20 })).body;
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
  expect((await stripe.deliver(gw.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status).toBe(200);
  expect((await gw.app.storage.purchases.customer(user.id))?.paymentMethodId).toMatch(/^pm_/);
  return user;
}

async function signedUp(gw: TestGateway): Promise<User> {
  const dashboard = new DashboardClient(gw.url);
  const { body } = await dashboard.signUp(uniqueEmail('card'));
  return { id: body.account_id, key: body.first_key.key, dashboard };
}

describe.each(DIALECTS)('auto-recharge by saved card (%s)', (dialect) => {
  let stripe: MockStripe;
  let gw: TestGateway;
  let receiver: Receiver;

  beforeAll(async () => {
    stripe = await startMockStripe();
    receiver = await startReceiver();
    gw = await startGateway({
      dialect,
      env: stripe.env,
      overrides: { webhooks: WEBHOOKS } as never,
    });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
    await receiver?.close();
  });

  it('needs a saved card to turn on; then a dip below the threshold is one off-session charge, credited once', async () => {
    stripe.intentOutcome = 'succeeded';
    const bare = await signedUp(gw);
    const refused = await bare.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold: 25, amount: 10 } });
    expect([refused.status, refused.body.error.type, refused.body.error.code, refused.body.error.param]).toEqual([
      400,
      'invalid_request_error',
      'payment_method_required',
      'auto_recharge.enabled',
    ]);
    expect((await credits(gw, bare.key)).billing.auto_recharge).toMatchObject({ enabled: false, available: false, unavailable_reason: expect.stringMatching(/saved payment method/) });

    const user = await userWithCard(gw, stripe);
    expect((await credits(gw, user.key)).billing.auto_recharge).toMatchObject({ available: true, unavailable_reason: null, disabled_reason: null });
    const enabled = await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold: 25, amount: 10 } });
    expect(enabled.status).toBe(200);
    expect(enabled.body.billing.auto_recharge).toMatchObject({ enabled: true, threshold: 25, amount: 10, available: true });

    const before = (await credits(gw, user.key)).balance.credits as number;
    expect(before).toBe(25);
    await spend(gw.url, user.key);
    await expect.poll(async () => (await recharges(gw, user.id)).length, { timeout: 5000 }).toBe(1);

    const [charge] = intentCalls(stripe, user.id);
    expect(intentCalls(stripe, user.id)).toHaveLength(1);
    const card = (await gw.app.storage.purchases.customer(user.id))!;
    expect(charge!.params).toMatchObject({
      amount: '1000',
      currency: 'usd',
      customer: card.customerId,
      payment_method: card.paymentMethodId,
      confirm: 'true',
      off_session: 'true',
      metadata: { recharge_id: expect.stringMatching(/^rch_/) },
    });
    expect(charge!.idempotencyKey).toBe(`recharge-${charge!.params.metadata.recharge_id}`);
    const intent = [...stripe.intents.values()].find((i) => i.metadata?.recharge_id === charge!.params.metadata.recharge_id)!;
    const [entry] = await recharges(gw, user.id);
    expect(entry.amount).toBe(10);
    expect(entry.note).toContain(intent.id);
    const after = (await credits(gw, user.key)).balance.credits as number;
    expect(after).toBeGreaterThan(before + 9.9);

    // Stripe's event for the same payment, delivered (twice) after the synchronous answer credited it: nothing more.
    const { charge: _charge, ...succeeded } = intent;
    for (let i = 0; i < 2; i++) expect((await stripe.deliver(gw.url, stripe.event('payment_intent.succeeded', succeeded))).status).toBe(200);
    expect(await recharges(gw, user.id)).toHaveLength(1);
    expect((await credits(gw, user.key)).balance.credits).toBe(after);
    expect(await gw.app.storage.ledger.sum(user.id)).toBe(BigInt(Math.round(after * 1e9)));
  });

  it('three declines in a row: three credit.recharge_failed deliveries, no credit, then auto-recharge is off with the reason', async () => {
    const user = await userWithCard(gw, stripe);
    const hook = await call(gw.url, user.key, 'POST', '/v1/webhooks', { url: `${receiver.url}/${user.id}`, events: [{ type: 'credit.recharge_failed' }], secret: 'receiver-secret-0123456789abcdef0123456789' });
    expect(hook.status).toBe(201);
    expect((await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold: 1000, amount: 10 } })).status).toBe(200);
    const mine = (r: { path: string }) => r.path === `/${user.id}`;

    const outcomes = ['card_declined', 'card_declined', 'authentication_required'] as const;
    for (const [i, outcome] of outcomes.entries()) {
      stripe.intentOutcome = outcome;
      await spend(gw.url, user.key);
      await receiver.waitFor(i + 1, mine);
    }
    const events = receiver.received.filter(mine).map((r) => JSON.parse(r.body));
    expect(events.map((e) => e.event)).toEqual(['credit.recharge_failed', 'credit.recharge_failed', 'credit.recharge_failed']);
    expect(events.map((e) => [e.data.code, e.data.consecutive_failures, e.data.auto_recharge_disabled])).toEqual([
      ['card_declined', 1, false],
      ['card_declined', 2, false],
      ['authentication_required', 3, true],
    ]);
    expect(events[0].data).toMatchObject({ account_id: user.id, amount: 10, currency: 'USD', decline_code: 'generic_decline', recharge_id: expect.stringMatching(/^rch_/) });
    expect(events[0].data.payment_intent_id).toMatch(/^pi_/);

    expect(await recharges(gw, user.id)).toEqual([]);
    const shown = (await credits(gw, user.key)).billing.auto_recharge;
    expect(shown).toMatchObject({ enabled: false, available: true, disabled_reason: expect.stringMatching(/3 failed recharges in a row.*authentication/) });
    expect((await user.dashboard.request('GET', '/overview')).body.billing.auto_recharge.disabled_reason).toBe(shown.disabled_reason);

    // Off: a further debit charges nothing. Turned on again, the reason is gone and the count starts over.
    await spend(gw.url, user.key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(intentCalls(stripe, user.id)).toHaveLength(3);
    const again = await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true } });
    expect(again.body.billing.auto_recharge).toMatchObject({ enabled: true, disabled_reason: null });
    stripe.intentOutcome = 'card_declined';
    await spend(gw.url, user.key);
    await receiver.waitFor(4, mine);
    expect(JSON.parse(receiver.received.filter(mine)[3]!.body).data).toMatchObject({ consecutive_failures: 1, auto_recharge_disabled: false });
    // Stripe failing (a 500): no credit either, and the failure counts.
    stripe.intentOutcome = 'api_error';
    await spend(gw.url, user.key);
    await receiver.waitFor(5, mine);
    expect(JSON.parse(receiver.received.filter(mine)[4]!.body).data).toMatchObject({ code: 'processor_unavailable', consecutive_failures: 2, payment_intent_id: null });
    expect(await recharges(gw, user.id)).toEqual([]);
  });
});

describe('two gateways on one PostgreSQL database (and Redis)', () => {
  let stripe: MockStripe;
  let gw: TestGateway;
  let second: App;

  beforeAll(async () => {
    stripe = await startMockStripe();
    const env = { ...stripe.env, REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tg-card-${Date.now()}:` };
    gw = await startGateway({ dialect: 'postgres', env });
    const config = loadConfig({
      env: { ...env, TOLLGATE_DATA_DIR: tempDir(), DATABASE_URL: gw.database.databaseUrl!, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, TOLLGATE_LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1' },
      file: undefined,
    });
    second = await createApp(config);
  });
  afterAll(async () => {
    await second?.close();
    await gw?.close();
    await stripe?.close();
  });

  it('debiting one account on both at once charges its card once', async () => {
    const user = await userWithCard(gw, stripe);
    expect((await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold: 25, amount: 10 } })).status).toBe(200);
    const secondUrl = await second.listen();
    // Both charges overlap at Stripe if both replicas start one.
    stripe.intentDelayMs = 300;
    await Promise.all([gw.url, secondUrl, gw.url, secondUrl].map((base) => spend(base, user.key)));
    await expect.poll(async () => (await recharges(gw, user.id)).length, { timeout: 5000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(intentCalls(stripe, user.id)).toHaveLength(1);
    expect(await recharges(gw, user.id)).toHaveLength(1);
  });
});
