/**
 * Sign-up against credit farming: emails are normalised, the grant waits for a verified email when SMTP is
 * configured (a real local SMTP server receives the link), sign-ups are limited per client address, sign-up does
 * not tell whether an email is registered, and weak passwords are refused.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMailbox, type Mailbox } from '../support/smtp.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';

const PASSWORD = 'correct horse battery';

async function balanceOf(gateway: TestGateway, email: string): Promise<bigint | undefined> {
  return (await gateway.app.storage.accounts.getByEmail(email))?.balanceNano;
}

async function grantsOf(gateway: TestGateway, email: string): Promise<number> {
  const account = (await gateway.app.storage.accounts.getByEmail(email))!;
  const entries = await gateway.app.storage.ledger.list(account.id, { limit: 100 });
  return entries.filter((e) => e.kind === 'grant').length;
}

function verificationToken(text: string): string {
  const match = /\/dashboard\/verify#([A-Za-z0-9_-]{43})/.exec(text);
  if (!match) throw new Error(`no verification link in:\n${text}`);
  return match[1]!;
}

describe('without SMTP (the embedded default: the grant at once)', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway?.close());

  test('look-alike spellings of one email map to the one account: no second grant', async () => {
    const tag = `carol${Date.now()}`;
    const email = `${tag}@example.com`;
    expect((await new DashboardClient(gateway.url).signUp(email)).status).toBe(201);
    const lookAlikes = [
      `${tag}@example.com.`,
      `${tag.replace('c', '\uff43')}@example.com`,
      ` ${tag.toUpperCase()}@EXAMPLE.COM `,
      `${tag}@ｅxample.com`,
    ];
    for (const lookAlike of lookAlikes) {
      const response = await new DashboardClient(gateway.url).signUp(lookAlike);
      expect(response.status, lookAlike).toBe(400);
      expect(response.body.error.param).toBe('email');
    }
    const admin = await gateway.admin('POST', '/admin/accounts', { email: `${tag}@example.com.` });
    expect([admin.status, admin.body.error?.param]).toEqual([400, 'email']);
    const accounts = await gateway.app.storage.accounts.list({ limit: 1000 });
    expect(accounts.filter((a) => a.email.normalize('NFKC').toLowerCase().includes(tag))).toHaveLength(1);
  });

  test('an email with an invisible character is refused', async () => {
    for (const email of [
      `carol\u200b${Date.now()}@example.com`,
      `carol${Date.now()}@exa\u00admple.com`,
      `ca\u202erol${Date.now()}@example.com`,
    ]) {
      const response = await new DashboardClient(gateway.url).signUp(email);
      expect([response.status, response.body.error.param], JSON.stringify(email)).toEqual([400, 'email']);
    }
  });

  test('weak passwords are refused with 400 naming the password and saying why', async () => {
    const weak = [
      '12345678',
      'aaaaaaaa',
      '        ',
      'aaaaaaaaaaaaaaaa',
      '123456789012',
      'password1234',
      'qwertyuiopasdf',
      '            ',
      'abcabcabcabcabc',
    ];
    for (const password of weak) {
      const response = await new DashboardClient(gateway.url).signUp(uniqueEmail('weak'), password);
      expect([response.status, response.body.error.param, response.body.error.type], JSON.stringify(password)).toEqual([
        400,
        'password',
        'invalid_request_error',
      ]);
      expect(response.body.error.message).toMatch(/password/i);
    }
    expect(
      (await new DashboardClient(gateway.url).signUp(uniqueEmail('strong'), 'purple monkey dishwasher')).status,
    ).toBe(201);
  });
});

test('without SMTP and grant_without_verification false, a self-serve account starts at 0 USD', async () => {
  const gateway = await startGateway({
    overrides: {
      signup: { grant_without_verification: false, per_ip_per_hour: 20, verification_ttl_hours: 24 },
    },
  });
  try {
    const email = uniqueEmail('nogrant');
    const response = await new DashboardClient(gateway.url).signUp(email);
    expect(response.status).toBe(201);
    expect(await balanceOf(gateway, email)).toBe(0n);
    // Operator-made accounts still get the grant.
    const made = await gateway.account();
    expect((await gateway.app.storage.accounts.get(made.id))!.balanceNano).toBe(5_000_000_000n);
  } finally {
    await gateway.close();
  }
});

describeEach(DIALECTS)('with SMTP on %s', (dialect) => {
  let gateway: TestGateway;
  let mailbox: Mailbox;
  beforeAll(async () => {
    mailbox = await startMailbox();
    gateway = await startGateway({
      dialect,
      env: { SMTP_URL: mailbox.url, SMTP_FROM: 'tollgate <noreply@gateway.example>' },
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await mailbox?.close();
  });

  test('sign-up grants nothing until the emailed link is followed; then 5 USD, exactly once', async () => {
    const email = uniqueEmail('verify');
    const client = new DashboardClient(gateway.url);
    const signup = await client.signUp(email);
    expect(signup.status).toBe(202);
    expect(signup.body).toEqual({ signed_in: false, verification_sent: true });
    expect(await balanceOf(gateway, email)).toBe(0n);
    expect((await client.request('GET', '/keys')).status).toBe(401);
    // The password is right, but the email is not confirmed yet.
    const early = await new DashboardClient(gateway.url).signIn(email, PASSWORD);
    expect([early.status, early.body.error.code]).toEqual([403, 'permission_denied']);

    const mail = await mailbox.next(email);
    expect(mail.text).toContain('From: tollgate <noreply@gateway.example>');
    const token = verificationToken(mail.text);

    const browser = new DashboardClient(gateway.url);
    await browser.request('GET', '/session');
    const [first, second] = await Promise.all([
      browser.request('POST', '/verify', { token }),
      browser.request('POST', '/verify', { token }),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const winner = first.body.signed_in ? first : second;
    expect(winner.body.email).toBe(email.toLowerCase());
    expect(winner.body.first_key.key).toMatch(/^tg-live-/);
    expect(await balanceOf(gateway, email)).toBe(5_000_000_000n);
    const again = await new DashboardClient(gateway.url)
      .request('GET', '/session')
      .then(async () => browser.request('POST', '/verify', { token }));
    expect(again.status).toBe(200);
    expect(await balanceOf(gateway, email)).toBe(5_000_000_000n);
    expect(await grantsOf(gateway, email)).toBe(1);
    const credits = await gateway.client(winner.body.first_key.key).get('/credits');
    expect((credits as { balance: { credits: number } }).balance.credits).toBe(5);
    expect((await new DashboardClient(gateway.url).signIn(email, PASSWORD)).status).toBe(200);
  });

  test('an unknown or forged token is refused', async () => {
    const client = new DashboardClient(gateway.url);
    await client.request('GET', '/session');
    const response = await client.request('POST', '/verify', { token: 'A'.repeat(43) });
    expect([response.status, response.body.error.param]).toEqual([400, 'token']);
  });

  test('sign-up of a registered email answers exactly as a new one, and changes nothing of that account', async () => {
    const email = uniqueEmail('owner');
    await new DashboardClient(gateway.url).signUp(email);
    const browser = new DashboardClient(gateway.url);
    await browser.request('GET', '/session');
    expect(
      (await browser.request('POST', '/verify', { token: verificationToken((await mailbox.next(email)).text) })).status,
    ).toBe(200);

    const fresh = await new DashboardClient(gateway.url).signUp(uniqueEmail('fresh'), 'another strong passphrase');
    const attacker = new DashboardClient(gateway.url);
    const taken = await attacker.signUp(email.toUpperCase(), 'another strong passphrase');
    expect(taken.status).toBe(fresh.status);
    expect(taken.body).toEqual(fresh.body);
    expect(attacker.lastSetCookie.some((c) => c.startsWith('tg_session='))).toBe(false);
    // The owner is told by email, without a link that could take the account.
    const notice = await mailbox.next(email);
    expect(notice.text).not.toMatch(/\/dashboard\/verify#/);
    expect((await new DashboardClient(gateway.url).signIn(email, 'another strong passphrase')).status).toBe(401);
    expect((await new DashboardClient(gateway.url).signIn(email, PASSWORD)).status).toBe(200);
    expect(await grantsOf(gateway, email)).toBe(1);
  });

  test('a second sign-up of an unverified email sends a new link; only its own password is set', async () => {
    const email = uniqueEmail('twice');
    await new DashboardClient(gateway.url).signUp(email, 'squatter password here');
    const squatterLink = verificationToken((await mailbox.next(email)).text);
    await new DashboardClient(gateway.url).signUp(email, PASSWORD);
    const ownerLink = verificationToken((await mailbox.next(email)).text);
    expect(ownerLink).not.toBe(squatterLink);
    const browser = new DashboardClient(gateway.url);
    await browser.request('GET', '/session');
    expect((await browser.request('POST', '/verify', { token: ownerLink })).status).toBe(200);
    expect((await new DashboardClient(gateway.url).signIn(email, 'squatter password here')).status).toBe(401);
    expect((await new DashboardClient(gateway.url).signIn(email, PASSWORD)).status).toBe(200);
    expect(await grantsOf(gateway, email)).toBe(1);
  });
});

test('sign-ups are limited per client address per hour; another address still signs up', async () => {
  const gateway = await startGateway({
    overrides: {
      signup: { grant_without_verification: true, per_ip_per_hour: 2, verification_ttl_hours: 24 },
    },
  });
  try {
    for (let i = 0; i < 2; i++)
      expect((await new DashboardClient(gateway.url).signUp(uniqueEmail('burst'))).status).toBe(201);
    const third = await new DashboardClient(gateway.url).signUp(uniqueEmail('burst'));
    expect([third.status, third.body.error.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(third.body.error.retry_after).toBe(Number(third.headers.get('retry-after')));
    const other = new DashboardClient(gateway.url, gateway.url, '127.0.0.2');
    expect((await other.signUp(uniqueEmail('elsewhere'))).status).toBe(201);
  } finally {
    await gateway.close();
  }
});
