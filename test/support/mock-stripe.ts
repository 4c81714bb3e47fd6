/**
 * A local server speaking Stripe's API wire format for the calls tollgate makes (written from Stripe's API
 * reference): form-encoded request bodies with bracketed keys, JSON objects with `object` and `id`, and Stripe's
 * error envelope `{"error": {"type", "code", "message", "param"}}`. The real `stripe` SDK is pointed at it by
 * `STRIPE_API_BASE`. Tests complete a session here and build the event Stripe would send for it.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export const MOCK_SECRET_KEY = 'sk_test_tollgate_mock_0123456789';
export const MOCK_WEBHOOK_SECRET = 'whsec_tollgate_mock_0123456789';

type Json = Record<string, any>;

export interface RecordedCall {
  method: string;
  path: string;
  params: Json;
  idempotencyKey: string | undefined;
}

export interface MockStripe {
  url: string;
  /** The gateway's settings that point it at this server: `STRIPE_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET`, `STRIPE_API_BASE`. */
  env: Record<string, string>;
  calls: RecordedCall[];
  sessions: Map<string, Json>;
  customers: Map<string, Json>;
  /** Payment intents, by id: those of paid sessions and those created by `POST /v1/payment_intents`. */
  intents: Map<string, Json>;
  /** Charges by id (with `amount_refunded`), and the refunds made by `POST /v1/refunds`. */
  charges: Map<string, Json>;
  refunds: Json[];
  /**
   * A dispute of a payment intent's charge as Stripe shows it (`status` e.g. needs_response, won, lost); `id` for a
   * second dispute object of the same charge (default: one id per payment intent).
   */
  dispute(paymentIntentId: string, status: string, amount?: number, id?: string): Json;
  /**
   * How the next `POST /v1/payment_intents` (an off-session charge of a saved card) ends: `succeeded`, declined
   * (402 `card_error`, `card_declined`), needing 3-D Secure (402 `card_error`, `authentication_required`), or
   * Stripe failing (500 `api_error`). A request repeating an idempotency key gets the first answer again.
   */
  intentOutcome: 'succeeded' | 'card_declined' | 'authentication_required' | 'api_error';
  /** Answers to `POST /v1/payment_intents` wait this long (ms), for overlapping charges. */
  intentDelayMs: number;
  /** Marks a session paid as Stripe does when the buyer pays: a payment intent with a card saved on the customer. */
  pay(sessionId: string): Json;
  /** Marks an unpaid session expired, as Stripe does when its time runs out. */
  expire(sessionId: string): Json;
  /** A Stripe event object for `object` (what Stripe POSTs to the webhook endpoint). */
  event(type: string, object: Json): Json;
  /** The `Stripe-Signature` header of a payload, signed with `secret` (default: the gateway's webhook secret). */
  sign(payload: string, secret?: string): string;
  /** POSTs `event` to a gateway's `/webhooks/stripe` as Stripe does; `signature` null sends none. */
  deliver(gatewayUrl: string, event: unknown, signature?: string | null): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

const token = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

export async function startMockStripe(): Promise<MockStripe> {
  const calls: RecordedCall[] = [];
  const sessions = new Map<string, Json>();
  const customers = new Map<string, Json>();
  const intents = new Map<string, Json>();
  const replies = new Map<string, [number, Json]>();
  const charges = new Map<string, Json>();
  const refunds: Json[] = [];

  const routes: Array<[string, RegExp, (params: Json, match: RegExpExecArray) => [number, Json]]> = [
    [
      'POST',
      /^\/v1\/customers$/,
      (params) => {
        const customer = {
          id: token('cus'),
          object: 'customer',
          email: params.email ?? null,
          metadata: params.metadata ?? {},
          created: now(),
          livemode: false,
        };
        customers.set(customer.id, customer);
        return [200, customer];
      },
    ],
    [
      'POST',
      /^\/v1\/checkout\/sessions$/,
      (params) => {
        for (const required of ['mode', 'success_url']) if (!params[required]) return missing(required);
        const items: Json[] = params.line_items ?? [];
        if (items.length === 0) return missing('line_items');
        if (params.customer && !customers.has(params.customer))
          return [
            400,
            stripeError(
              'invalid_request_error',
              'resource_missing',
              `No such customer: '${params.customer}'`,
              'customer',
            ),
          ];
        const amount = items.reduce(
          (sum, item) => sum + Number(item.price_data.unit_amount) * Number(item.quantity ?? 1),
          0,
        );
        const id = `cs_test_${randomBytes(16).toString('hex')}`;
        const session = {
          id,
          object: 'checkout.session',
          mode: params.mode,
          status: 'open',
          payment_status: 'unpaid',
          amount_total: amount,
          amount_subtotal: amount,
          currency: items[0]!.price_data.currency,
          customer: params.customer ?? null,
          client_reference_id: params.client_reference_id ?? null,
          metadata: params.metadata ?? {},
          payment_intent: null,
          success_url: params.success_url,
          cancel_url: params.cancel_url ?? null,
          url: `https://checkout.stripe.test/c/pay/${id}`,
          created: now(),
          expires_at: now() + 86_400,
          livemode: false,
        };
        sessions.set(id, session);
        return [200, session];
      },
    ],
    [
      'GET',
      /^\/v1\/checkout\/sessions\/([^/]+)$/,
      (_params, match) => {
        const session = sessions.get(match[1]!);
        return session
          ? [200, session]
          : [
              404,
              stripeError('invalid_request_error', 'resource_missing', `No such checkout.session: '${match[1]}'`, 'id'),
            ];
      },
    ],
    [
      'GET',
      /^\/v1\/charges\/([^/]+)$/,
      (_params, match) => {
        const charge = charges.get(match[1]!);
        return charge
          ? [200, charge]
          : [404, stripeError('invalid_request_error', 'resource_missing', `No such charge: '${match[1]}'`, 'id')];
      },
    ],
    [
      'GET',
      /^\/v1\/payment_intents\/([^/]+)$/,
      (params, match) => {
        const intent = intents.get(match[1]!);
        if (!intent)
          return [
            404,
            stripeError('invalid_request_error', 'resource_missing', `No such payment_intent: '${match[1]}'`, 'intent'),
          ];
        const expand: string[] = params.expand ?? [];
        return [200, { ...intent, latest_charge: expand.includes('latest_charge') ? intent.charge : intent.charge.id }];
      },
    ],
  ];

  /** A charge as Stripe shows it, kept so refunds can find it by payment intent and `GET /v1/charges/{id}` can show it. */
  function newCharge(paymentIntent: string, amount: number, currency: string, paid: boolean): Json {
    const charge = {
      id: token('ch'),
      object: 'charge',
      amount,
      amount_refunded: 0,
      currency,
      paid,
      refunded: false,
      payment_intent: paymentIntent,
      receipt_url: `https://pay.stripe.test/receipts/${token('rcpt')}`,
      created: now(),
      livemode: false,
    };
    charges.set(charge.id, charge);
    return charge;
  }

  /** `POST /v1/refunds`: refunds `amount` (default: what is left) of a payment intent's charge. */
  function createRefund(params: Json): [number, Json] {
    if (!params.payment_intent && !params.charge) return missing('payment_intent');
    const charge = params.charge ? charges.get(params.charge) : intents.get(params.payment_intent)?.charge;
    if (!charge)
      return [
        400,
        stripeError(
          'invalid_request_error',
          'resource_missing',
          `No such payment_intent: '${params.payment_intent}'`,
          'payment_intent',
        ),
      ];
    const left = charge.amount - charge.amount_refunded;
    const amount = params.amount === undefined ? left : Number(params.amount);
    if (left === 0)
      return [
        400,
        stripeError(
          'invalid_request_error',
          'charge_already_refunded',
          `Charge ${charge.id} has already been refunded.`,
        ),
      ];
    if (!(amount > 0) || amount > left) {
      return [
        400,
        stripeError(
          'invalid_request_error',
          'amount_too_large',
          `Refund amount ($${(amount / 100).toFixed(2)}) is greater than unrefunded amount on charge ($${(left / 100).toFixed(2)})`,
          'amount',
        ),
      ];
    }
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded === charge.amount;
    const refund = {
      id: token('re'),
      object: 'refund',
      amount,
      charge: charge.id,
      currency: charge.currency,
      payment_intent: charge.payment_intent,
      metadata: params.metadata ?? {},
      status: 'succeeded',
      created: now(),
    };
    refunds.push(refund);
    return [200, refund];
  }

  const server = createServer((req, res) => {
    void handle(req, res).catch((error) => send(res, 500, stripeError('api_error', null, String(error))));
  });

  /** `POST /v1/payment_intents` with `confirm`: the intent as Stripe leaves it, or Stripe's 402 card error carrying it. */
  function createIntent(params: Json): [number, Json] {
    for (const required of ['amount', 'currency']) if (!params[required]) return missing(required);
    if (params.customer && !customers.has(params.customer))
      return [
        400,
        stripeError('invalid_request_error', 'resource_missing', `No such customer: '${params.customer}'`, 'customer'),
      ];
    const outcome = mock.intentOutcome;
    if (outcome === 'api_error') return [500, stripeError('api_error', null, 'An unknown error occurred')];
    const intentId = token('pi');
    const charge = newCharge(intentId, Number(params.amount), params.currency, outcome === 'succeeded');
    const intent: Json = {
      id: intentId,
      object: 'payment_intent',
      amount: Number(params.amount),
      amount_received: outcome === 'succeeded' ? Number(params.amount) : 0,
      currency: params.currency,
      customer: params.customer ?? null,
      payment_method: params.payment_method ?? null,
      confirmation_method: 'automatic',
      description: params.description ?? null,
      metadata: params.metadata ?? {},
      status: outcome === 'succeeded' ? 'succeeded' : 'requires_payment_method',
      latest_charge: charge.id,
      charge,
      created: now(),
      livemode: false,
    };
    intents.set(intent.id, intent);
    const { charge: _charge, ...shown } = intent;
    if (outcome === 'succeeded') return [200, shown];
    const message =
      outcome === 'card_declined'
        ? 'Your card was declined.'
        : 'Your card was declined. This transaction requires authentication.';
    const declineCode = outcome === 'card_declined' ? 'generic_decline' : 'authentication_required';
    const lastError = { type: 'card_error', code: outcome, decline_code: declineCode, message, charge: charge.id };
    intent.last_payment_error = shown.last_payment_error = lastError;
    return [402, { error: { ...lastError, payment_intent: shown, request_log_url: null } }];
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://stripe.test');
    const form = req.method === 'GET' ? url.search.slice(1) : Buffer.concat(chunks).toString('utf8');
    if (req.headers.authorization !== `Bearer ${MOCK_SECRET_KEY}`) {
      return send(res, 401, stripeError('invalid_request_error', null, 'Invalid API Key provided: sk_test_****'));
    }
    const params = parseForm(form);
    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    calls.push({ method: req.method!, path: url.pathname, params, idempotencyKey });
    if (req.method === 'POST' && url.pathname === '/v1/payment_intents') {
      await new Promise((resolve) => setTimeout(resolve, mock.intentDelayMs));
      const reply = (idempotencyKey && replies.get(idempotencyKey)) || createIntent(params);
      if (idempotencyKey) replies.set(idempotencyKey, reply);
      return send(res, reply[0], reply[1]);
    }
    if (req.method === 'POST' && url.pathname === '/v1/refunds') {
      const reply = (idempotencyKey && replies.get(idempotencyKey)) || createRefund(params);
      if (idempotencyKey) replies.set(idempotencyKey, reply);
      return send(res, reply[0], reply[1]);
    }
    for (const [method, pattern, answer] of routes) {
      const match = pattern.exec(url.pathname);
      if (match && method === req.method) {
        const [status, body] = answer(params, match);
        return send(res, status, body);
      }
    }
    send(
      res,
      404,
      stripeError('invalid_request_error', null, `Unrecognized request URL (${req.method}: ${url.pathname}).`),
    );
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const url = `http://127.0.0.1:${port}`;
  const mock: MockStripe = {
    url,
    env: { STRIPE_SECRET_KEY: MOCK_SECRET_KEY, STRIPE_WEBHOOK_SECRET: MOCK_WEBHOOK_SECRET, STRIPE_API_BASE: url },
    calls,
    sessions,
    customers,
    intents,
    charges,
    refunds,
    dispute(paymentIntentId, status, amount, id) {
      const charge = intents.get(paymentIntentId)!.charge;
      return {
        id: id ?? `dp_${paymentIntentId.slice(3)}`,
        object: 'dispute',
        amount: amount ?? charge.amount,
        charge: charge.id,
        currency: charge.currency,
        payment_intent: paymentIntentId,
        reason: 'fraudulent',
        status,
        is_charge_refundable: false,
        created: now(),
        livemode: false,
      };
    },
    intentOutcome: 'succeeded',
    intentDelayMs: 0,
    pay(sessionId) {
      const session = sessions.get(sessionId)!;
      const paymentMethod = token('pm');
      const intentId = token('pi');
      const charge = newCharge(intentId, session.amount_total, session.currency, true);
      const intent = {
        id: intentId,
        object: 'payment_intent',
        amount: session.amount_total,
        currency: session.currency,
        customer: session.customer,
        payment_method: paymentMethod,
        setup_future_usage: 'off_session',
        status: 'succeeded',
        charge,
      };
      intents.set(intent.id, intent);
      Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: intent.id });
      return { ...session };
    },
    expire(sessionId) {
      const session = sessions.get(sessionId)!;
      Object.assign(session, { status: 'expired', url: null });
      return { ...session };
    },
    event(type, object) {
      return {
        id: token('evt'),
        object: 'event',
        api_version: Stripe.API_VERSION,
        created: now(),
        type,
        data: { object },
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
      };
    },
    sign(payload, secret = MOCK_WEBHOOK_SECRET) {
      return Stripe.webhooks.generateTestHeaderString({ payload, secret });
    },
    async deliver(gatewayUrl, event, signature) {
      const payload = JSON.stringify(event);
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
      const header = signature === undefined ? mock.sign(payload) : signature;
      if (header !== null) headers['stripe-signature'] = header;
      const response = await fetch(`${gatewayUrl}/webhooks/stripe`, { method: 'POST', headers, body: payload });
      return { status: response.status, body: (await response.json()) as any };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return mock;
}

function stripeError(type: string, code: string | null, message: string, param?: string): Json {
  return { error: { type, ...(code ? { code } : {}), message, ...(param ? { param } : {}), request_log_url: null } };
}

function missing(param: string): [number, Json] {
  return [400, stripeError('invalid_request_error', 'parameter_missing', `Missing required param: ${param}.`, param)];
}

function send(res: ServerResponse, status: number, body: Json): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': token('req') });
  res.end(JSON.stringify(body));
}

/** `a[b][0][c]=x&expand[]=y` as nested objects and arrays, as Stripe reads its form-encoded parameters. */
export function parseForm(text: string): Json {
  const root: Json = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.split('[').map((part, i) => (i === 0 ? part : part.replace(/\]$/, '')));
    let node: any = root;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[i + 1]!);
      const slot = part === '' ? node.length : part;
      if (last) node[slot] = value;
      else node = node[slot] ??= nextIsIndex ? [] : {};
    });
  }
  return root;
}
