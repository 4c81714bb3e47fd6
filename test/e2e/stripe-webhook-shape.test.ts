/**
 * Bodies signed with the webhook secret that are not the Stripe events tollgate reads: a body that is no event is a
 * 400 in the error envelope, an event whose object lacks what tollgate reads is acknowledged (200) and moves no
 * money, never a 500. A signature's timestamp outside Stripe's 5-minute tolerance is refused either way, old or
 * ahead of the clock.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiCall } from '../support/admin-call.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { MOCK_WEBHOOK_SECRET, startMockStripe, type MockStripe } from '../support/mock-stripe.js';

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

/** POSTs `payload` as it is, signed (at `timestamp`, seconds, if given) with the gateway's webhook secret. */
async function deliverRaw(payload: string, timestamp?: number): Promise<{ status: number; body: any }> {
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: MOCK_WEBHOOK_SECRET,
    ...(timestamp === undefined ? {} : { timestamp }),
  });
  const response = await fetch(`${gw.url}/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    body: payload,
  });
  return { status: response.status, body: await response.json() };
}

const balance = async (key: string) =>
  (await apiCall(gw.url, key, 'GET', '/v1/credits')).body.balance.credits as number;

/** An account with a paid 20 USD purchase (5 USD sign-up credit + 20). */
async function paidPurchase() {
  const account = await gw.account();
  const purchase = (await apiCall(gw.url, account.key, 'POST', '/v1/credits/purchases', { amount: 20 })).body;
  const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
  const paid = stripe.pay(session.id);
  expect((await stripe.deliver(gw.url, stripe.event('checkout.session.completed', paid))).status).toBe(200);
  expect(await balance(account.key)).toBe(25);
  return { ...account, intentId: paid.payment_intent as string };
}

describe('signed Stripe bodies that are not what tollgate reads', () => {
  it('a body that is not an event is a 400 in the error envelope', async () => {
    const bodies: Array<[string, string | null]> = [
      ['null', null],
      ['[]', null],
      ['"charge.refunded"', null],
      ['{', null],
      [JSON.stringify({ id: 'evt_1', object: 'event', type: 'charge.refunded' }), 'data.object'],
      [JSON.stringify({ id: 'evt_2', object: 'event', type: 'charge.refunded', data: null }), 'data.object'],
      [
        JSON.stringify({ id: 'evt_3', object: 'event', type: 'charge.refunded', data: { object: null } }),
        'data.object',
      ],
      [JSON.stringify({ id: 'evt_4', object: 'event', type: 'payment_intent.succeeded', data: {} }), 'data.object'],
      [JSON.stringify({ object: 'event', data: { object: {} } }), null],
    ];
    for (const [payload, param] of bodies) {
      const answer = await deliverRaw(payload);
      expect(answer.status, payload).toBe(400);
      expect(answer.body.error, payload).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_request',
        param,
      });
    }
  });

  it('an event whose object lacks the fields tollgate reads is acknowledged and moves no money', async () => {
    const { key, intentId } = await paidPurchase();
    const { amount_refunded: _refunded, ...charge } = stripe.charges.get(stripe.intents.get(intentId)!.charge.id)!;
    const { amount: _amount, ...dispute } = stripe.dispute(intentId, 'needs_response');
    const objects: Array<[string, Record<string, unknown>]> = [
      ['charge.refunded', charge],
      ['charge.refunded', { ...charge, amount_refunded: '2000' }],
      ['charge.refunded', { ...charge, amount_refunded: 2000, id: null }],
      ['charge.dispute.created', dispute],
      ['charge.dispute.created', { ...dispute, amount: -2000 }],
      ['charge.dispute.closed', { ...dispute, amount: 2000, status: null }],
      ['checkout.session.completed', { payment_status: 'paid', metadata: null, amount_total: null }],
      ['payment_intent.succeeded', { metadata: { recharge_id: 42 } }],
      ['payment_intent.payment_failed', { metadata: null, last_payment_error: 'declined' }],
    ];
    for (const [type, object] of objects) {
      const answer = await stripe.deliver(gw.url, stripe.event(type, object));
      expect(answer.status, `${type} ${JSON.stringify(object)}`).toBe(200);
      expect(answer.body).toEqual({ received: true });
    }
    expect(await balance(key)).toBe(25);
  });

  it("a signature's timestamp more than 5 minutes from the clock is refused, ahead as well as behind", async () => {
    const { key, intentId } = await paidPurchase();
    const charge = stripe.charges.get(stripe.intents.get(intentId)!.charge.id)!;
    const payload = JSON.stringify(stripe.event('charge.refunded', { ...charge, amount_refunded: 2000 }));
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [now + 3600, now + 301, now - 3600]) {
      const answer = await deliverRaw(payload, timestamp);
      expect(answer.status, String(timestamp - now)).toBe(400);
      expect(answer.body.error).toMatchObject({ code: 'invalid_request', param: 'Stripe-Signature' });
    }
    expect(await balance(key)).toBe(25);
    // Within the tolerance, ahead of the clock (a sender's clock a little fast), it applies.
    expect((await deliverRaw(payload, now + 60)).status).toBe(200);
    expect(await balance(key)).toBe(5);
  });
});
