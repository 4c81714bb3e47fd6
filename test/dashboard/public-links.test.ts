/**
 * Links the gateway builds (Stripe Checkout's return, emailed verification and sign-in links) never take their
 * host from a `Host` header nobody vouched for: the configured public URL, else a host the operator lists, else a
 * loopback address; any other host is refused with a message saying what to set, before anything is stored.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { startMailbox, type Mailbox } from '../support/smtp.js';
import { DashboardClient, uniqueEmail } from './client.js';

const PASSWORD = 'correct horse battery';

/** A request to the gateway carrying `host` as its Host header (and, for the dashboard, the matching Origin). */
async function sendAs(
  gateway: TestGateway,
  host: string,
  method: 'GET' | 'POST',
  path: string,
  options: { body?: unknown; key?: string; client?: DashboardClient } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { host };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const { client } = options;
  if (client) {
    headers.cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (method !== 'GET') Object.assign(headers, { origin: `http://${host}`, 'x-csrf-token': client.csrf });
  }
  const answer = await request(`${gateway.url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await answer.body.text();
  return { status: answer.statusCode, body: text ? JSON.parse(text) : undefined };
}

const checkoutCalls = (stripe: MockStripe) => stripe.calls.filter((c) => c.path === '/v1/checkout/sessions');

function expectRefusal(answer: { status: number; body: any }, what: RegExp): void {
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: null });
  expect(answer.body.error.message).toMatch(what);
  expect(answer.body.error.message).toContain('TOLLGATE_PUBLIC_URL');
  expect(answer.body.error.message).toContain('TOLLGATE_PUBLIC_HOSTS');
}

describe('purchases without TOLLGATE_PUBLIC_URL', () => {
  let stripe: MockStripe;
  let gateway: TestGateway;
  beforeAll(async () => {
    stripe = await startMockStripe();
    gateway = await startGateway({ env: { ...stripe.env, TOLLGATE_PUBLIC_HOSTS: 'shop.example, Pay.Example:8443' } });
  });
  afterAll(async () => {
    await gateway?.close();
    await stripe?.close();
  });

  test('a Host nobody listed is refused, saying what to set, and no Checkout Session is made', async () => {
    const { key } = await gateway.account();
    const before = checkoutCalls(stripe).length;
    const answer = await sendAs(gateway, 'attacker.example', 'POST', '/v1/credits/purchases', {
      key,
      body: { amount: 20 },
    });
    expectRefusal(answer, /^Buying credit is not available at this address/);
    expect(answer.body.error.message).toContain('"attacker.example"');
    expect(checkoutCalls(stripe)).toHaveLength(before);
    expect((await sendAs(gateway, 'attacker.example', 'GET', '/v1/credits/purchases', { key })).body.data).toEqual([]);
  });

  test('a listed host (any case, with its port) and a loopback address are used for the return URL', async () => {
    const { key } = await gateway.account();
    for (const [host, base] of [
      ['shop.example', 'http://shop.example'],
      ['pay.example:8443', 'http://pay.example:8443'],
      ['localhost:9', 'http://localhost:9'],
      ['127.0.0.1', 'http://127.0.0.1'],
    ]) {
      const answer = await sendAs(gateway, host!, 'POST', '/v1/credits/purchases', { key, body: { amount: 20 } });
      expect(answer.status, host).toBe(201);
      const call = checkoutCalls(stripe).find((c) => c.params.client_reference_id === answer.body.id)!;
      expect(call.params.success_url).toBe(`${base}/dashboard/credits?purchase=${answer.body.id}`);
      expect(call.params.cancel_url).toBe(`${base}/dashboard/credits?purchase=${answer.body.id}&canceled=1`);
    }
    // A listed name does not vouch for a longer one ending with it.
    const lookalike = await sendAs(gateway, 'shop.example.attacker.example', 'POST', '/v1/credits/purchases', {
      key,
      body: { amount: 20 },
    });
    expect(lookalike.status).toBe(400);
  });

  test("the dashboard's purchase is refused the same way, and /api/purchasing says why beforehand", async () => {
    const client = new DashboardClient(gateway.url);
    expect((await client.signUp(uniqueEmail('host'), PASSWORD)).status).toBe(201);
    const shown = await sendAs(gateway, 'attacker.example', 'GET', '/dashboard/api/purchasing', { client });
    expect(shown.status).toBe(200);
    expect(shown.body.available).toBe(false);
    expect(shown.body.unavailable_reason).toContain('TOLLGATE_PUBLIC_URL');
    const before = checkoutCalls(stripe).length;
    const bought = await sendAs(gateway, 'attacker.example', 'POST', '/dashboard/api/purchases', {
      client,
      body: { amount: 20 },
    });
    expectRefusal(bought, /^Buying credit is not available at this address/);
    expect(checkoutCalls(stripe)).toHaveLength(before);
    expect((await client.request('GET', '/purchasing')).body).toMatchObject({
      available: true,
      unavailable_reason: null,
    });
  });
});

test('with TOLLGATE_PUBLIC_URL, the return URL is that address whatever the Host', async () => {
  const stripe = await startMockStripe();
  const gateway = await startGateway({ env: { ...stripe.env, TOLLGATE_PUBLIC_URL: 'https://gateway.example/' } });
  try {
    const { key } = await gateway.account();
    const answer = await sendAs(gateway, 'attacker.example', 'POST', '/v1/credits/purchases', {
      key,
      body: { amount: 20 },
    });
    expect(answer.status).toBe(201);
    const call = checkoutCalls(stripe).find((c) => c.params.client_reference_id === answer.body.id)!;
    expect(call.params.success_url).toBe(`https://gateway.example/dashboard/credits?purchase=${answer.body.id}`);
  } finally {
    await gateway.close();
    await stripe.close();
  }
});

describe('emailed links without TOLLGATE_PUBLIC_URL', () => {
  let mailbox: Mailbox;
  let gateway: TestGateway;
  beforeAll(async () => {
    mailbox = await startMailbox();
    gateway = await startGateway({ env: { SMTP_URL: mailbox.url, TOLLGATE_PUBLIC_HOSTS: 'gateway.example' } });
  });
  afterAll(async () => {
    await gateway?.close();
    await mailbox?.close();
  });

  test('a sign-up from a Host nobody listed is refused before anything is stored or mailed', async () => {
    const email = uniqueEmail('poisoned');
    const client = new DashboardClient(gateway.url);
    await client.request('GET', '/session');
    const mailsBefore = mailbox.received.length;
    const answer = await sendAs(gateway, 'attacker.example', 'POST', '/dashboard/api/signup', {
      client,
      body: { email, password: PASSWORD },
    });
    expectRefusal(answer, /^Signing up is not available at this address/);
    expect(await gateway.app.storage.accounts.getByEmail(email)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(mailbox.received.length).toBe(mailsBefore);
  });

  test('a listed host gets its links; the already-registered notice too', async () => {
    const email = uniqueEmail('listed');
    const client = new DashboardClient(gateway.url);
    await client.request('GET', '/session');
    const answer = await sendAs(gateway, 'gateway.example', 'POST', '/dashboard/api/signup', {
      client,
      body: { email, password: PASSWORD },
    });
    expect(answer.status).toBe(202);
    const mail = await mailbox.next(email);
    expect(mail.text).toMatch(/http:\/\/gateway\.example\/dashboard\/verify#[A-Za-z0-9_-]{43}/);
    const token = /verify#([A-Za-z0-9_-]{43})/.exec(mail.text)![1]!;
    const browser = new DashboardClient(gateway.url);
    await browser.request('GET', '/session');
    expect((await browser.request('POST', '/verify', { token })).status).toBe(200);

    await sendAs(gateway, 'gateway.example', 'POST', '/dashboard/api/signup', {
      client,
      body: { email, password: PASSWORD },
    });
    expect((await mailbox.next(email)).text).toContain('http://gateway.example/dashboard/signin');
  });

  test('a loopback address gets its links (a gateway on a developer machine)', async () => {
    const email = uniqueEmail('loopback');
    expect((await new DashboardClient(gateway.url).signUp(email, PASSWORD)).status).toBe(202);
    expect((await mailbox.next(email)).text).toContain(`${gateway.url}/dashboard/verify#`);
  });
});
