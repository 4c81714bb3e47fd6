/**
 * Payments taken back: Stripe's refunds and disputes debit the ledger in full (a balance may go below zero, and then
 * nothing runs until credit is added), once per payment however Stripe delivers; an operator refunds a purchase
 * through Stripe. End to end on both databases, the real `stripe` SDK against the local Stripe server.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { describeEach } from '../support/backends.js';
import { apiCall } from '../support/admin-call.js';

const call = (gw: TestGateway, key: string, method: string, path: string, body?: unknown) =>
  apiCall(gw.url, key, method, path, body);

const credits = async (gw: TestGateway, key: string) => (await call(gw, key, 'GET', '/v1/credits')).body;
const ledger = async (gw: TestGateway, accountId: string) =>
  (await gw.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`)).body.data as any[];
const chat = (gw: TestGateway, key: string) =>
  call(gw, key, 'POST', '/v1/chat/completions', {
    model: 'sandbox/lorem',
    max_tokens: 5,
    messages: [{ role: 'user', content: 'hi' }],
  });

/** The sum of the ledger equals the balance, in nano-USD (the ledger renders USD with 9 decimals at most). */
async function expectLedgerMatches(gw: TestGateway, accountId: string, key: string) {
  const entries = await ledger(gw, accountId);
  const sum = entries.reduce((total, e) => total + BigInt(Math.round(e.amount * 1e9)), 0n);
  expect(sum).toBe(BigInt(Math.round((await credits(gw, key)).balance.credits * 1e9)));
}

describeEach(DIALECTS)('refunds and disputes through Stripe (%s)', (dialect) => {
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

  /** An account with a paid purchase of `amount` USD (5 USD sign-up credit + amount). */
  async function paidPurchase(amount: number) {
    const account = await gw.account();
    const purchase = (await call(gw, account.key, 'POST', '/v1/credits/purchases', { amount })).body;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    const paid = stripe.pay(session.id);
    expect((await stripe.deliver(gw.url, stripe.event('checkout.session.completed', paid))).status).toBe(200);
    return { ...account, purchaseId: purchase.id as string, intentId: paid.payment_intent as string };
  }

  it('an operator refunds a purchase through Stripe: debited in full, the balance below zero stops spending until credit is added', async () => {
    const { id, key, purchaseId, intentId } = await paidPurchase(20);
    expect((await credits(gw, key)).balance.credits).toBe(25);
    // The user spent 10 of it (an operator correction stands in for the spending here).
    expect((await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: -10 })).status).toBe(200);

    const refunded = await gw.admin('POST', `/admin/accounts/${id}/purchases/${purchaseId}/refund`);
    expect(refunded.status).toBe(200);
    expect(refunded.body).toMatchObject({
      object: 'credit_refund',
      status: 'succeeded',
      purchase_id: purchaseId,
      amount_refunded: 20,
      debited: 20,
      balance: { credits: -5 },
    });
    expect(refunded.body.id).toMatch(/^re_/);
    const refundCall = stripe.calls.find((c) => c.path === '/v1/refunds' && c.params.payment_intent === intentId)!;
    expect(refundCall.params.amount).toBe('2000');
    expect(refundCall.idempotencyKey).toBeTruthy();

    const shown = await credits(gw, key);
    expect(shown.balance).toMatchObject({ credits: -5, can_spend: false });
    expect(shown.balance.reason).toMatch(/refunded or disputed/);
    const refused = await chat(gw, key);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/below zero/);

    // Stripe's own event for that refund, delivered three times at once: already applied.
    const charge = stripe.charges.get(stripe.intents.get(intentId)!.charge.id)!;
    const event = stripe.event('charge.refunded', { ...charge });
    const answers = await Promise.all([1, 2, 3].map(() => stripe.deliver(gw.url, event)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await credits(gw, key)).balance.credits).toBe(-5);
    const refunds = (await ledger(gw, id)).filter((e) => e.kind === 'refund');
    expect(refunds.map((e) => e.amount)).toEqual([-20]);

    // Nothing more to refund.
    const again = await gw.admin('POST', `/admin/accounts/${id}/purchases/${purchaseId}/refund`);
    expect(again.status).toBe(400);
    expect(again.body.error.param).toBe('amount');

    // Credit added: spending works again.
    expect((await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: 10 })).body.balance.credits).toBe(5);
    expect((await credits(gw, key)).balance.can_spend).toBeUndefined();
    expect((await chat(gw, key)).status).toBe(200);
    await expectLedgerMatches(gw, id, key);
  });

  it('partial refunds reported out of order take back their running total once', async () => {
    const { id, key, intentId } = await paidPurchase(20);
    const chargeId = stripe.intents.get(intentId)!.charge.id;
    const charge = stripe.charges.get(chargeId)!;
    const first = stripe.event('charge.refunded', { ...charge, amount_refunded: 500 });
    const second = stripe.event('charge.refunded', { ...charge, amount_refunded: 1300 });
    expect((await stripe.deliver(gw.url, second)).body).toMatchObject({ received: true });
    await stripe.deliver(gw.url, first);
    await stripe.deliver(gw.url, second);
    expect((await credits(gw, key)).balance.credits).toBe(12);
    expect((await ledger(gw, id)).filter((e) => e.kind === 'refund').map((e) => e.amount)).toEqual([-13]);
    await expectLedgerMatches(gw, id, key);
  });

  it('a dispute takes the amount back while open; won gives it back, and a late delivery of the opening changes nothing', async () => {
    const { id, key, intentId } = await paidPurchase(20);
    const opened = stripe.event('charge.dispute.created', stripe.dispute(intentId, 'needs_response'));
    await Promise.all([stripe.deliver(gw.url, opened), stripe.deliver(gw.url, opened)]);
    expect((await credits(gw, key)).balance.credits).toBe(5);
    await stripe.deliver(gw.url, stripe.event('charge.dispute.closed', stripe.dispute(intentId, 'won')));
    expect((await credits(gw, key)).balance.credits).toBe(25);
    await stripe.deliver(gw.url, opened);
    await stripe.deliver(gw.url, stripe.event('charge.dispute.updated', stripe.dispute(intentId, 'under_review')));
    expect((await credits(gw, key)).balance.credits).toBe(25);
    expect((await ledger(gw, id)).filter((e) => e.kind === 'dispute').map((e) => e.amount)).toEqual([20, -20]);
    await expectLedgerMatches(gw, id, key);
  });

  it('a lost dispute keeps the amount taken back, even below zero', async () => {
    const { id, key, intentId } = await paidPurchase(20);
    await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: -15 });
    await stripe.deliver(gw.url, stripe.event('charge.dispute.closed', stripe.dispute(intentId, 'lost')));
    await stripe.deliver(gw.url, stripe.event('charge.dispute.created', stripe.dispute(intentId, 'needs_response')));
    expect((await credits(gw, key)).balance).toMatchObject({ credits: -10, can_spend: false });
    expect((await chat(gw, key)).status).toBe(402);
    await expectLedgerMatches(gw, id, key);
  });

  it('a full refund and disputes of the same purchase, in either order or at once, take back the purchase once', async () => {
    // A refund, then a dispute that is lost, then a second dispute object of the same charge.
    const refundedFirst = await paidPurchase(20);
    const refundedCharge = stripe.charges.get(stripe.intents.get(refundedFirst.intentId)!.charge.id)!;
    const refunded = (charge: Record<string, unknown>) =>
      stripe.event('charge.refunded', { ...charge, amount_refunded: 2000, refunded: true });
    const dispute = (intentId: string, status: string, id?: string) =>
      stripe.event('charge.dispute.created', stripe.dispute(intentId, status, undefined, id));
    await stripe.deliver(gw.url, refunded(refundedCharge));
    await stripe.deliver(gw.url, dispute(refundedFirst.intentId, 'needs_response'));
    await stripe.deliver(gw.url, dispute(refundedFirst.intentId, 'lost'));
    await stripe.deliver(gw.url, dispute(refundedFirst.intentId, 'needs_response', 'dp_second'));
    expect((await credits(gw, refundedFirst.key)).balance.credits).toBe(5);
    await expectLedgerMatches(gw, refundedFirst.id, refundedFirst.key);

    // A dispute, then the refund; the dispute is won: the refund still stands.
    const disputedFirst = await paidPurchase(20);
    const disputedCharge = stripe.charges.get(stripe.intents.get(disputedFirst.intentId)!.charge.id)!;
    await stripe.deliver(gw.url, dispute(disputedFirst.intentId, 'needs_response'));
    await stripe.deliver(gw.url, refunded(disputedCharge));
    expect((await credits(gw, disputedFirst.key)).balance.credits).toBe(5);
    await stripe.deliver(gw.url, dispute(disputedFirst.intentId, 'won'));
    expect((await credits(gw, disputedFirst.key)).balance.credits).toBe(5);
    await expectLedgerMatches(gw, disputedFirst.id, disputedFirst.key);

    // The refund and two disputes delivered at once.
    const atOnce = await paidPurchase(20);
    const atOnceCharge = stripe.charges.get(stripe.intents.get(atOnce.intentId)!.charge.id)!;
    const answers = await Promise.all([
      stripe.deliver(gw.url, refunded(atOnceCharge)),
      stripe.deliver(gw.url, dispute(atOnce.intentId, 'needs_response')),
      stripe.deliver(gw.url, dispute(atOnce.intentId, 'needs_response', 'dp_other')),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await credits(gw, atOnce.key)).balance.credits).toBe(5);
    const takenBack = (await ledger(gw, atOnce.id)).filter((e) => e.kind === 'refund' || e.kind === 'dispute');
    expect(takenBack.map((e) => e.amount)).toEqual([-20]);
    await expectLedgerMatches(gw, atOnce.id, atOnce.key);
  });

  it('ignores refunds and disputes of payments that are not its own, and refuses refunds it cannot make', async () => {
    const { id, key, purchaseId } = await paidPurchase(20);
    const stranger = {
      id: 'ch_stranger',
      object: 'charge',
      amount: 2000,
      amount_refunded: 2000,
      currency: 'usd',
      payment_intent: 'pi_not_ours',
      refunded: true,
    };
    expect((await stripe.deliver(gw.url, stripe.event('charge.refunded', stranger))).status).toBe(200);
    expect((await credits(gw, key)).balance.credits).toBe(25);

    const other = await gw.account();
    expect((await gw.admin('POST', `/admin/accounts/${other.id}/purchases/${purchaseId}/refund`)).status).toBe(404);
    const tooMuch = await gw.admin('POST', `/admin/accounts/${id}/purchases/${purchaseId}/refund`, { amount: 25 });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.error.param).toBe('amount');
    expect(
      (await gw.admin('POST', `/admin/accounts/${id}/purchases/${purchaseId}/refund`, { amount: 0.001 })).status,
    ).toBe(400);
    const pending = (await call(gw, key, 'POST', '/v1/credits/purchases', { amount: 10 })).body;
    expect((await gw.admin('POST', `/admin/accounts/${id}/purchases/${pending.id}/refund`)).status).toBe(400);

    const partial = await gw.admin('POST', `/admin/accounts/${id}/purchases/${purchaseId}/refund`, { amount: 7.5 });
    expect(partial.body).toMatchObject({ amount_refunded: 7.5, debited: 7.5, balance: { credits: 17.5 } });
    expect((await credits(gw, key)).balance.credits).toBe(17.5);
    await expectLedgerMatches(gw, id, key);
  });
});
