/**
 * Auto-recharge by saved card, end to end on the real gateway and both databases: the card is saved by a Checkout
 * purchase, a recharge is an off-session PaymentIntent at a local server speaking Stripe's wire format (real
 * `stripe` SDK), credited once when Stripe says it succeeded, whether its answer or its event comes first; declines
 * send `credit.recharge_failed` to the account's webhooks and three in a row turn auto-recharge off; a charge left
 * `processing` waits for Stripe's event; a recharge whose process died is taken over after the lease without a
 * second charge; the dashboard lists the recharges. Two gateways on one PostgreSQL charge once.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { RECHARGE_LEASE_MS, stripeClient } from '../../src/payments/index.js';
import { connect } from '../../src/storage/connect.js';
import { newId } from '../../src/storage/index.js';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { DIALECTS, tempDir } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { MOCK_SECRET_KEY, startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { startReceiver, type Receiver } from '../webhooks/receiver-server.js';
import { describeEach, needsPostgresAndRedis } from '../support/backends.js';
import { apiCall } from '../support/admin-call.js';

const WEBHOOKS = { allow_private_urls: true, poll_interval_ms: 50, refresh_ms: 200 };

interface User {
  id: string;
  key: string;
  dashboard: DashboardClient;
}

type Json = Record<string, any>;

/**
 * The network between the gateway and Stripe: passes every request and answer through, except that a test may
 * hold or change Stripe's answer to a charge (`POST /v1/payment_intents`, 200) on its way back to the gateway.
 */
interface StripeLine {
  url: string;
  onCharge: ((intent: Json) => Json | Promise<Json>) | undefined;
  close(): Promise<void>;
}

async function startStripeLine(stripeUrl: string): Promise<StripeLine> {
  const hopByHop = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);
  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !hopByHop.has(name))) as Record<
        string,
        string
      >;
      const answer = await fetch(`${stripeUrl}${req.url}`, {
        method: req.method!,
        headers,
        ...(req.method === 'GET' ? {} : { body: Buffer.concat(chunks) }),
      });
      let body = await answer.text();
      if (req.method === 'POST' && req.url === '/v1/payment_intents' && answer.status === 200 && line.onCharge)
        body = JSON.stringify(await line.onCharge(JSON.parse(body)));
      res
        .writeHead(answer.status, {
          'content-type': 'application/json',
          'request-id': answer.headers.get('request-id') ?? '',
        })
        .end(body);
    })().catch((error) => res.writeHead(502).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const line: StripeLine = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    onCharge: undefined,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return line;
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const call = (base: string, key: string, method: string, path: string, body?: unknown) =>
  apiCall(base, key, method, path, body);

const credits = async (gw: TestGateway, key: string) => (await call(gw.url, key, 'GET', '/v1/credits')).body;
const recharges = async (gw: TestGateway, accountId: string) =>
  ((await gw.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[]).filter(
    (e) => e.kind === 'recharge',
  );
const intentCalls = (stripe: MockStripe, accountId: string) =>
  stripe.calls.filter((c) => c.path === '/v1/payment_intents' && c.params.metadata?.account_id === accountId);

async function spend(base: string, key: string): Promise<void> {
  const answer = await call(base, key, 'POST', '/v1/chat/completions', {
    model: 'sandbox/lorem',
    max_tokens: 5,
    messages: [{ role: 'user', content: 'spend' }],
  });
  expect(answer.status).toBe(200);
}

/** A dashboard user whose card is saved: a 20 USD purchase paid at Checkout and confirmed by Stripe's event. */
async function userWithCard(gw: TestGateway, stripe: MockStripe): Promise<User> {
  const user = await signedUp(gw);
  const purchase = (await call(gw.url, user.key, 'POST', '/v1/credits/purchases', { amount: 20 })).body;
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
  expect(
    (await stripe.deliver(gw.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
  ).toBe(200);
  expect((await gw.app.storage.purchases.customer(user.id))?.paymentMethodId).toMatch(/^pm_/);
  return user;
}

async function enable(user: User, threshold: number, amount: number): Promise<void> {
  expect(
    (await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold, amount } }))
      .status,
  ).toBe(200);
}

/** Stripe's event object for a payment intent it holds (without the mock's own `charge`). */
function intentObject(stripe: MockStripe, id: string): Json {
  const { charge: _charge, ...intent } = stripe.intents.get(id)!;
  return intent;
}

async function signedUp(gw: TestGateway): Promise<User> {
  const dashboard = new DashboardClient(gw.url);
  const { body } = await dashboard.signUp(uniqueEmail('card'));
  return { id: body.account_id, key: body.first_key.key, dashboard };
}

describeEach(DIALECTS)('auto-recharge by saved card (%s)', (dialect) => {
  let stripe: MockStripe;
  let line: StripeLine;
  let gw: TestGateway;
  let receiver: Receiver;

  beforeAll(async () => {
    stripe = await startMockStripe();
    line = await startStripeLine(stripe.url);
    receiver = await startReceiver();
    gw = await startGateway({
      dialect,
      env: { ...stripe.env, STRIPE_API_BASE: line.url },
      overrides: { webhooks: WEBHOOKS },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await line?.close();
    await stripe?.close();
    await receiver?.close();
  });

  it('needs a saved card to turn on; then a dip below the threshold is one off-session charge, credited once', async () => {
    stripe.intentOutcome = 'succeeded';
    const bare = await signedUp(gw);
    const refused = await bare.dashboard.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 25, amount: 10 },
    });
    expect([refused.status, refused.body.error.type, refused.body.error.code, refused.body.error.param]).toEqual([
      400,
      'invalid_request_error',
      'payment_method_required',
      'auto_recharge.enabled',
    ]);
    expect((await credits(gw, bare.key)).billing.auto_recharge).toMatchObject({
      enabled: false,
      available: false,
      unavailable_reason: expect.stringMatching(/saved payment method/),
    });

    const user = await userWithCard(gw, stripe);
    expect((await credits(gw, user.key)).billing.auto_recharge).toMatchObject({
      available: true,
      unavailable_reason: null,
      disabled_reason: null,
    });
    const enabled = await user.dashboard.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 25, amount: 10 },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.billing.auto_recharge).toMatchObject({
      enabled: true,
      threshold: 25,
      amount: 10,
      available: true,
    });

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
    const intent = [...stripe.intents.values()].find(
      (i) => i.metadata?.recharge_id === charge!.params.metadata.recharge_id,
    )!;
    const [entry] = await recharges(gw, user.id);
    expect(entry.amount).toBe(10);
    expect(entry.note).toContain(intent.id);
    const after = (await credits(gw, user.key)).balance.credits as number;
    expect(after).toBeGreaterThan(before + 9.9);

    // Stripe's event for the same payment, delivered (twice) after the synchronous answer credited it: nothing more.
    const { charge: _charge, ...succeeded } = intent;
    for (let i = 0; i < 2; i++)
      expect((await stripe.deliver(gw.url, stripe.event('payment_intent.succeeded', succeeded))).status).toBe(200);
    expect(await recharges(gw, user.id)).toHaveLength(1);
    expect((await credits(gw, user.key)).balance.credits).toBe(after);
    expect(await gw.app.storage.ledger.sum(user.id)).toBe(BigInt(Math.round(after * 1e9)));

    // The dashboard's receipts: the recharge with Stripe's reference; only for the signed-in user.
    const listed = await user.dashboard.request('GET', '/recharges');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      object: 'list',
      data: [
        {
          id: charge!.params.metadata.recharge_id,
          object: 'card_recharge',
          amount: 10,
          currency: 'USD',
          status: 'succeeded',
          failure_reason: null,
          payment_intent_id: intent.id,
          receipt_url: stripe.charges.get(stripe.intents.get(intent.id)!.charge.id)!.receipt_url,
          created: expect.any(Number),
          settled_at: expect.any(Number),
        },
      ],
      has_more: false,
      next_before: null,
    });
    expect((await bare.dashboard.request('GET', '/recharges')).body.data).toEqual([]);
    expect((await new DashboardClient(gw.url).request('GET', '/recharges')).status).toBe(401);
  });

  it('three declines in a row: three credit.recharge_failed deliveries, no credit, then auto-recharge is off with the reason', async () => {
    const user = await userWithCard(gw, stripe);
    const hook = await call(gw.url, user.key, 'POST', '/v1/webhooks', {
      url: `${receiver.url}/${user.id}`,
      events: [{ type: 'credit.recharge_failed' }],
      secret: 'receiver-secret-0123456789abcdef0123456789',
    });
    expect(hook.status).toBe(201);
    expect(
      (
        await user.dashboard.request('PATCH', '/settings', {
          auto_recharge: { enabled: true, threshold: 1000, amount: 10 },
        })
      ).status,
    ).toBe(200);
    const mine = (r: { path: string }) => r.path === `/${user.id}`;

    const outcomes = ['card_declined', 'card_declined', 'authentication_required'] as const;
    for (const [i, outcome] of outcomes.entries()) {
      stripe.intentOutcome = outcome;
      await spend(gw.url, user.key);
      await receiver.waitFor(i + 1, mine);
    }
    const events = receiver.received.filter(mine).map((r) => JSON.parse(r.body));
    expect(events.map((e) => e.event)).toEqual([
      'credit.recharge_failed',
      'credit.recharge_failed',
      'credit.recharge_failed',
    ]);
    expect(events.map((e) => [e.data.code, e.data.consecutive_failures, e.data.auto_recharge_disabled])).toEqual([
      ['card_declined', 1, false],
      ['card_declined', 2, false],
      ['authentication_required', 3, true],
    ]);
    expect(events[0].data).toMatchObject({
      account_id: user.id,
      amount: 10,
      currency: 'USD',
      decline_code: 'generic_decline',
      recharge_id: expect.stringMatching(/^rch_/),
    });
    expect(events[0].data.payment_intent_id).toMatch(/^pi_/);
    // Each failed recharge keeps the reference of the charge Stripe declined.
    const rows = await gw.app.storage.recharges.list(user.id, { limit: 10 });
    expect(rows.map((r) => [r.id, r.paymentIntentId]).reverse()).toEqual(
      events.map((e) => [e.data.recharge_id, e.data.payment_intent_id]),
    );

    expect(await recharges(gw, user.id)).toEqual([]);
    const shown = (await credits(gw, user.key)).billing.auto_recharge;
    expect(shown).toMatchObject({
      enabled: false,
      available: true,
      disabled_reason: expect.stringMatching(/3 failed recharges in a row.*authentication/),
    });
    expect((await user.dashboard.request('GET', '/overview')).body.billing.auto_recharge.disabled_reason).toBe(
      shown.disabled_reason,
    );
    // Turning it off is a settings change by tollgate, in the audit log with the reason.
    const settingsChanges = (await user.dashboard.request('GET', '/audit?action=settings.update')).body.data;
    const bySystem = settingsChanges.filter((e: { actor: { type: string } }) => e.actor.type === 'system');
    expect(bySystem.map((e: { actor: unknown; after: unknown }) => [e.actor, e.after])).toEqual([
      [
        { type: 'system', id: null, email: null },
        { auto_recharge: { enabled: false, disabled_reason: shown.disabled_reason } },
      ],
    ]);

    // Off: a further debit charges nothing. Turned on again, the reason is gone and the count starts over.
    await spend(gw.url, user.key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(intentCalls(stripe, user.id)).toHaveLength(3);
    const again = await user.dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true } });
    expect(again.body.billing.auto_recharge).toMatchObject({ enabled: true, disabled_reason: null });
    stripe.intentOutcome = 'card_declined';
    await spend(gw.url, user.key);
    await receiver.waitFor(4, mine);
    expect(JSON.parse(receiver.received.filter(mine)[3]!.body).data).toMatchObject({
      consecutive_failures: 1,
      auto_recharge_disabled: false,
    });
    // Stripe failing (a 500): no credit either, and the failure counts.
    stripe.intentOutcome = 'api_error';
    await spend(gw.url, user.key);
    await receiver.waitFor(5, mine);
    expect(JSON.parse(receiver.received.filter(mine)[4]!.body).data).toMatchObject({
      code: 'processor_unavailable',
      consecutive_failures: 2,
      payment_intent_id: null,
    });
    expect(await recharges(gw, user.id)).toEqual([]);

    // The dashboard lists the five failed recharges, newest first, two a page, each with why it failed.
    const listed: any[] = [];
    let before: string | null = null;
    do {
      const page: any = (await user.dashboard.request('GET', `/recharges?limit=2${before ? `&before=${before}` : ''}`))
        .body;
      expect(page.data.length).toBe(page.has_more ? 2 : 1);
      listed.push(...page.data);
      before = page.next_before;
    } while (before);
    expect(listed.map((r) => [r.status, r.failure_reason?.split(':')[0]])).toEqual([
      ['failed', 'processor_unavailable'],
      ['failed', 'card_declined'],
      ['failed', 'authentication_required'],
      ['failed', 'card_declined'],
      ['failed', 'card_declined'],
    ]);
    expect(listed.map((r) => r.id)).toEqual(
      receiver.received
        .filter(mine)
        .map((r) => JSON.parse(r.body).data.recharge_id)
        .reverse(),
    );
  });

  it("Stripe's payment_intent.succeeded arriving before its answer to the charge credits the recharge once", async () => {
    stripe.intentOutcome = 'succeeded';
    const user = await userWithCard(gw, stripe);
    await enable(user, 25, 10);
    const charged = deferred<Json>();
    const release = deferred<void>();
    line.onCharge = async (answer) => {
      if (answer.metadata?.account_id !== user.id) return answer;
      charged.resolve(answer);
      await release.promise;
      return answer;
    };
    let intentId: string;
    try {
      await spend(gw.url, user.key);
      // Stripe has charged the card; its answer is held on the way back while Stripe's event arrives.
      intentId = (await charged.promise).id;
      expect(stripe.intents.get(intentId)!.status).toBe('succeeded');
      expect(
        (await stripe.deliver(gw.url, stripe.event('payment_intent.succeeded', intentObject(stripe, intentId)))).status,
      ).toBe(200);
      const early = await recharges(gw, user.id);
      expect(early).toHaveLength(1);
      expect(early[0].note).toContain(intentId);
    } finally {
      release.resolve();
      line.onCharge = undefined;
    }
    // The answer ("succeeded") reaches the gateway now; the recharge is credited already, so it moves nothing.
    await pause(600);
    const entries = await recharges(gw, user.id);
    expect(entries.map((e) => e.amount)).toEqual([10]);
    expect(intentCalls(stripe, user.id)).toHaveLength(1);
    const recharge = (await gw.app.storage.recharges.list(user.id, { limit: 10 }))[0]!;
    expect(recharge).toMatchObject({ status: 'succeeded', paymentIntentId: intentId! });
    const balance = (await gw.app.storage.accounts.get(user.id))!.balanceNano;
    expect(await gw.app.storage.ledger.sum(user.id)).toBe(balance);
  });

  it('a pending recharge whose process died is taken over after the lease, with its idempotency key: one charge, one credit', async () => {
    stripe.intentOutcome = 'succeeded';
    const user = await userWithCard(gw, stripe);
    const card = (await gw.app.storage.purchases.customer(user.id))!;
    // A gateway process wrote its recharge and charged the card, then died before Stripe's answer came back.
    const rechargeId = newId('rch');
    expect(
      await gw.app.storage.recharges.begin({
        id: rechargeId,
        accountId: user.id,
        amountNano: 10_000_000_000n,
        processor: 'stripe',
        at: Date.now(),
      }),
    ).toEqual({ started: true });
    const charged = await stripeClient(MOCK_SECRET_KEY, stripe.url).paymentIntents.create(
      {
        amount: 1000,
        currency: 'usd',
        customer: card.customerId,
        payment_method: card.paymentMethodId!,
        confirm: true,
        off_session: true,
        metadata: { recharge_id: rechargeId, account_id: user.id },
      },
      { idempotencyKey: `recharge-${rechargeId}` },
    );
    expect(charged.status).toBe('succeeded');
    await enable(user, 25, 10);

    // Within the lease the recharge still counts as in flight: a debit below the threshold charges nothing.
    await spend(gw.url, user.key);
    await pause(400);
    expect(intentCalls(stripe, user.id)).toHaveLength(1);
    expect(await recharges(gw, user.id)).toEqual([]);

    // Its claim older than the lease (5 minutes): the next debit takes it over and sends the same request again.
    const { db } = connect({ dataDir: gw.database.dataDir, databaseUrl: gw.database.databaseUrl });
    try {
      const claimedAt = BigInt(Date.now() - RECHARGE_LEASE_MS - 1_000);
      const moved = await db
        .updateTable('card_recharges')
        .set({ claimed_at: claimedAt })
        .where('id', '=', rechargeId)
        .executeTakeFirst();
      expect(Number(moved.numUpdatedRows)).toBe(1);
    } finally {
      await db.destroy();
    }
    await spend(gw.url, user.key);
    await expect.poll(async () => (await recharges(gw, user.id)).length, { timeout: 5000 }).toBe(1);
    const [entry] = await recharges(gw, user.id);
    expect(entry.amount).toBe(10);
    expect(entry.note).toContain(charged.id);
    // Stripe saw the one key twice and charged once.
    expect(intentCalls(stripe, user.id).map((c) => c.idempotencyKey)).toEqual([
      `recharge-${rechargeId}`,
      `recharge-${rechargeId}`,
    ]);
    expect([...stripe.intents.values()].filter((i) => i.metadata?.account_id === user.id).map((i) => i.id)).toEqual([
      charged.id,
    ]);
    expect(await gw.app.storage.recharges.get(rechargeId)).toMatchObject({
      status: 'succeeded',
      paymentIntentId: charged.id,
    });

    // Stripe's event for that charge comes too: nothing more.
    expect(
      (await stripe.deliver(gw.url, stripe.event('payment_intent.succeeded', intentObject(stripe, charged.id)))).status,
    ).toBe(200);
    expect(await recharges(gw, user.id)).toHaveLength(1);

    // The account's next recharge is a new one.
    await enable(user, 1000, 10);
    await spend(gw.url, user.key);
    await expect.poll(async () => (await recharges(gw, user.id)).length, { timeout: 5000 }).toBe(2);
    const keys = intentCalls(stripe, user.id).map((c) => c.idempotencyKey);
    expect(keys).toHaveLength(3);
    expect(keys[2]).not.toBe(`recharge-${rechargeId}`);
    expect(await gw.app.storage.ledger.sum(user.id)).toBe((await gw.app.storage.accounts.get(user.id))!.balanceNano);
  });

  it('a charge left processing stays pending and uncredited; payment_intent.payment_failed fails it and frees the account', async () => {
    stripe.intentOutcome = 'succeeded';
    const user = await userWithCard(gw, stripe);
    await enable(user, 1000, 10);
    // Stripe answers the charge `processing` (a payment that settles later), and shows it so.
    line.onCharge = (answer) => {
      if (answer.metadata?.account_id !== user.id) return answer;
      Object.assign(stripe.intents.get(answer.id)!, { status: 'processing', amount_received: 0 });
      return { ...answer, status: 'processing', amount_received: 0 };
    };
    try {
      await spend(gw.url, user.key);
      await expect
        .poll(async () => (await gw.app.storage.recharges.list(user.id, { limit: 10 }))[0]?.paymentIntentId ?? null, {
          timeout: 5000,
        })
        .not.toBeNull();
    } finally {
      line.onCharge = undefined;
    }
    const [pending] = await gw.app.storage.recharges.list(user.id, { limit: 10 });
    expect(pending).toMatchObject({ status: 'pending', failure: null });
    expect(await recharges(gw, user.id)).toEqual([]);

    // While it is pending the account is not charged again.
    await spend(gw.url, user.key);
    await pause(400);
    expect(intentCalls(stripe, user.id)).toHaveLength(1);

    // Stripe: the payment failed.
    const intent = stripe.intents.get(pending!.paymentIntentId!)!;
    Object.assign(intent, {
      status: 'requires_payment_method',
      last_payment_error: {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
      },
    });
    for (let i = 0; i < 2; i++)
      expect(
        (await stripe.deliver(gw.url, stripe.event('payment_intent.payment_failed', intentObject(stripe, intent.id))))
          .status,
      ).toBe(200);
    expect(await gw.app.storage.recharges.get(pending!.id)).toMatchObject({
      status: 'failed',
      failure: 'card_declined: Your card has insufficient funds.',
      settledAt: expect.any(Number),
    });
    expect(await recharges(gw, user.id)).toEqual([]);
    // It counts as a failure in a row, as a declined charge does (once, however often Stripe reports it).
    expect((await gw.app.storage.accounts.get(user.id))!.settings.autoRecharge.failures).toBe(1);

    // The next debit below the threshold starts a new recharge, which succeeds.
    await spend(gw.url, user.key);
    await expect.poll(async () => (await recharges(gw, user.id)).length, { timeout: 5000 }).toBe(1);
    const calls = intentCalls(stripe, user.id);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.params.metadata.recharge_id).not.toBe(pending!.id);
    const shown = (await user.dashboard.request('GET', '/recharges')).body.data;
    expect(shown.map((r: any) => [r.status, r.failure_reason])).toEqual([
      ['succeeded', null],
      ['failed', 'card_declined: Your card has insufficient funds.'],
    ]);
    expect(shown[1].payment_intent_id).toBe(intent.id);
    expect(shown[0].receipt_url).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\//);
    expect(shown[1].receipt_url).toBeNull();
    expect(await gw.app.storage.ledger.sum(user.id)).toBe((await gw.app.storage.accounts.get(user.id))!.balanceNano);
  });
});

needsPostgresAndRedis('two gateways on one PostgreSQL database (and Redis)', () => {
  let stripe: MockStripe;
  let gw: TestGateway;
  let second: App;

  beforeAll(async () => {
    stripe = await startMockStripe();
    const env = { ...stripe.env, REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tg-card-${Date.now()}:` };
    gw = await startGateway({ dialect: 'postgres', env });
    const config = loadConfig({
      env: {
        ...env,
        TOLLGATE_DATA_DIR: tempDir(),
        DATABASE_URL: gw.database.databaseUrl!,
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
        TOLLGATE_LOG_LEVEL: 'silent',
        PORT: '0',
        HOST: '127.0.0.1',
      },
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
    expect(
      (
        await user.dashboard.request('PATCH', '/settings', {
          auto_recharge: { enabled: true, threshold: 25, amount: 10 },
        })
      ).status,
    ).toBe(200);
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
