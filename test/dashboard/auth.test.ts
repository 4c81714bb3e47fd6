/** Sign-up, sign-in and sessions over HTTP, on SQLite and PostgreSQL: cookies, CSRF, rate limits, errors. */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';

describeEach(DIALECTS)('dashboard sign-in on %s', (dialect) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway({
      dialect,
      overrides: { dashboard: { enabled: true, signup: true, session_ttl_hours: 1, signin_attempts_per_minute: 3 } },
    });
  });
  afterAll(() => gateway?.close());

  test('sign-up opens a free account with 5 USD, a session cookie and a first key that works', async () => {
    const client = new DashboardClient(gateway.url);
    const email = uniqueEmail('Signup');
    const { status, body } = await client.signUp(email);
    expect(status).toBe(201);
    expect(body.email).toBe(email.toLowerCase());
    const session = client.lastSetCookie.find((c) => c.startsWith('tg_session='))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).toMatch(/Path=\/dashboard/);
    expect(session).not.toMatch(/Secure/);
    const overview = await client.request('GET', '/overview');
    expect(overview.body.balance).toEqual({ credits: 5, currency: 'USD' });
    expect(overview.body.billing.plan).toBe('free');
    const credits = await gateway.client(body.first_key.key).get('/credits');
    expect((credits as { balance: { credits: number } }).balance.credits).toBe(5);
  });

  test('sign-up refuses a short password, a bad email and a taken email with 400 naming the field', async () => {
    const client = new DashboardClient(gateway.url);
    let response = await client.signUp(uniqueEmail('short'), 'short');
    expect([response.status, response.body.error.param, response.body.error.type]).toEqual([
      400,
      'password',
      'invalid_request_error',
    ]);
    response = await client.signUp('not-an-email');
    expect([response.status, response.body.error.param]).toEqual([400, 'email']);
    const email = uniqueEmail('taken');
    expect((await client.signUp(email)).status).toBe(201);
    response = await new DashboardClient(gateway.url).signUp(email.toUpperCase());
    expect([response.status, response.body.error.param]).toEqual([400, 'email']);
    response = await client.request('POST', '/signup', {
      email: uniqueEmail('x'),
      password: 'long enough 1',
      admin: true,
    });
    expect(response.status).toBe(400);
  });

  test('sign-in with the right password starts a session; a wrong one or an unknown email is 401', async () => {
    const email = uniqueEmail('signin');
    await new DashboardClient(gateway.url).signUp(email, 'the right password');
    const wrong = await new DashboardClient(gateway.url).signIn(email, 'the wrong password');
    expect([wrong.status, wrong.body.error.code, wrong.body.error.type]).toEqual([
      401,
      'invalid_credentials',
      'authentication_error',
    ]);
    const unknown = await new DashboardClient(gateway.url).signIn(uniqueEmail('nobody'), 'the right password');
    expect(unknown.body.error).toEqual(wrong.body.error);
    const client = new DashboardClient(gateway.url);
    expect((await client.signIn(email, 'the right password')).status).toBe(200);
    expect((await client.request('GET', '/keys')).status).toBe(200);
  });

  test('sign-in attempts are rate-limited per email, even with the right password', async () => {
    const email = uniqueEmail('limited');
    await new DashboardClient(gateway.url).signUp(email, 'the right password');
    for (let i = 0; i < 2; i++)
      expect((await new DashboardClient(gateway.url).signIn(email, `guess ${i}`)).status).toBe(401);
    const fourth = await new DashboardClient(gateway.url).signIn(email, 'the right password');
    expect(fourth.status).toBe(429);
    expect(fourth.body.error.code).toBe('rate_limit_exceeded');
    expect(fourth.body.error.retry_after).toBeGreaterThanOrEqual(1);
    expect(fourth.headers.get('retry-after')).toBe(String(fourth.body.error.retry_after));
  });

  test('sign-out ends the session: the old cookie no longer opens the API', async () => {
    const client = new DashboardClient(gateway.url);
    await client.signUp(uniqueEmail('signout'));
    const stolen = new Map(client.cookies);
    expect((await client.request('POST', '/signout')).status).toBe(204);
    const replay = new DashboardClient(gateway.url);
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    const response = await replay.request('GET', '/keys');
    expect([response.status, response.body.error.code]).toEqual([401, 'not_signed_in']);
  });

  test('state changes need the same origin and the session CSRF token', async () => {
    const client = new DashboardClient(gateway.url);
    await client.signUp(uniqueEmail('csrf'));
    const keysBefore = (await client.request('GET', '/keys')).body.data.length;
    const attempts = [
      await client.request('POST', '/keys', { name: 'x' }, { 'x-csrf-token': '' }),
      await client.request('POST', '/keys', { name: 'x' }, { 'x-csrf-token': 'A'.repeat(43) }),
      await client.request('POST', '/keys', { name: 'x' }, { origin: 'https://evil.example' }),
      await client.request('POST', '/keys', { name: 'x' }, { origin: '', 'sec-fetch-site': 'cross-site' }),
      // What an HTML form on another site can send: no custom header, a simple content type.
      await client.request('POST', '/keys', 'name=x', {
        'content-type': 'application/x-www-form-urlencoded',
        'x-csrf-token': '',
      }),
    ];
    for (const attempt of attempts)
      expect([attempt.status, attempt.body.error.code]).toEqual([403, 'permission_denied']);
    expect((await client.request('GET', '/keys')).body.data.length).toBe(keysBefore);
    expect((await client.request('POST', '/keys', { name: 'ok' })).status).toBe(201);
  });

  test('sign-in needs the anonymous CSRF token of the same browser (no login CSRF)', async () => {
    const email = uniqueEmail('logincsrf');
    await new DashboardClient(gateway.url).signUp(email, 'the right password');
    const client = new DashboardClient(gateway.url);
    const response = await client.request('POST', '/signin', { email, password: 'the right password' });
    expect([response.status, response.body.error.code]).toEqual([403, 'permission_denied']);
  });

  test('the dashboard pages carry a strict CSP, / redirects to them, unknown API routes are 404', async () => {
    const root = await fetch(`${gateway.url}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/dashboard/']);
    const page = await fetch(`${gateway.url}/dashboard/credits`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const missing = await new DashboardClient(gateway.url).request('GET', '/nothing-here');
    expect([missing.status, missing.body.error.code]).toEqual([404, 'not_found']);
  });
});

test('sign-up can be closed by configuration; Secure cookies behind an HTTPS proxy', async () => {
  const gateway = await startGateway({
    overrides: {
      dashboard: { enabled: true, signup: false, session_ttl_hours: 1, signin_attempts_per_minute: 10 },
      server: { trust_proxy: true },
    },
  });
  try {
    const client = new DashboardClient(gateway.url, 'https://gateway.example');
    const session = await client.request('GET', '/session', undefined, {
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'gateway.example',
    });
    expect(session.body.signup_enabled).toBe(false);
    expect(client.lastSetCookie[0]).toMatch(/; Secure/);
    const response = await client.request(
      'POST',
      '/signup',
      { email: uniqueEmail('closed'), password: 'long enough 1' },
      { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gateway.example' },
    );
    expect([response.status, response.body.error.code]).toEqual([403, 'permission_denied']);
  } finally {
    await gateway.close();
  }
});
