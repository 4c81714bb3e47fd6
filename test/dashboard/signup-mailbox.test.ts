/**
 * One mailbox, one sign-up grant: addresses that deliver to the same inbox (`+tags` anywhere; dots, and googlemail.com,
 * for Gmail) share one grant, even when their sign-ups race, while each address still signs in as typed. Accounts
 * made before this rule are entered by a migration.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connect } from '../../src/storage/connect.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrate.js';
import { mailboxOf } from '../../src/storage/mailboxes.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS, createTestDatabase } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMailbox, type Mailbox } from '../support/smtp.js';
import { DashboardClient } from './client.js';

const PASSWORD = 'correct horse battery';
const FIVE_USD = 5_000_000_000n;

const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

async function balanceOf(gateway: TestGateway, email: string): Promise<bigint | undefined> {
  return (await gateway.app.storage.accounts.getByEmail(email))?.balanceNano;
}

test('the mailbox of an address', () => {
  expect(mailboxOf('a.b+x@gmail.com')).toBe('ab@gmail.com');
  expect(mailboxOf('ab@googlemail.com')).toBe('ab@gmail.com');
  expect(mailboxOf('A.B@GMail.com')).toBe('ab@gmail.com');
  expect(mailboxOf('carol+news+more@example.com')).toBe('carol@example.com');
  // Dots are the mailbox's own outside Gmail.
  expect(mailboxOf('c.arol@example.com')).toBe('c.arol@example.com');
  expect(mailboxOf('+tag@example.com')).toBe('+tag@example.com');
});

describeEach(DIALECTS)('sign-up grants per mailbox on %s, without SMTP', (dialect) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway({ dialect });
  });
  afterAll(() => gateway?.close());

  test('spellings of one mailbox get one grant between them; each still signs in as typed', async () => {
    const name = `ann${unique()}`;
    const [a, b, c, d] = [
      `${name.slice(0, 3)}.${name.slice(3)}+x@gmail.com`,
      `${name}@googlemail.com`,
      `${name}+shop@gmail.com`,
      `${name.slice(0, 2)}.${name.slice(2)}@gmail.com`,
    ];
    const first = await new DashboardClient(gateway.url).signUp(a, PASSWORD);
    expect(first.status).toBe(201);
    expect(await balanceOf(gateway, a)).toBe(FIVE_USD);
    for (const other of [b, c, d]) {
      const answer = await new DashboardClient(gateway.url).signUp(other, PASSWORD);
      expect(answer.status, other).toBe(201);
      expect(answer.body.email).toBe(other);
      expect(await balanceOf(gateway, other), other).toBe(0n);
    }
    for (const email of [a, b, c, d]) {
      const signedIn = await new DashboardClient(gateway.url).signIn(email, PASSWORD);
      expect([signedIn.status, signedIn.body.email], email).toEqual([200, email]);
    }
    // Another mailbox of the same domain (dots count outside Gmail) still gets its own.
    const carol = `carol${unique()}`;
    expect((await new DashboardClient(gateway.url).signUp(`${carol}+1@example.com`, PASSWORD)).status).toBe(201);
    expect((await new DashboardClient(gateway.url).signUp(`${carol}@example.com`, PASSWORD)).status).toBe(201);
    expect(await balanceOf(gateway, `${carol}@example.com`)).toBe(0n);
    const dotted = `${carol.slice(0, 1)}.${carol.slice(1)}@example.com`;
    expect((await new DashboardClient(gateway.url).signUp(dotted, PASSWORD)).status).toBe(201);
    expect(await balanceOf(gateway, dotted)).toBe(FIVE_USD);
  });

  test('two sign-ups of one mailbox at the same moment get one grant between them', async () => {
    for (let round = 0; round < 3; round++) {
      const name = `race${unique()}`;
      const spellings = [`${name.slice(0, 2)}.${name.slice(2)}+x@gmail.com`, `${name}@googlemail.com`];
      const clients = spellings.map((_, i) => new DashboardClient(gateway.url, gateway.url, `127.0.0.${i + 3}`));
      await Promise.all(clients.map((client) => client.request('GET', '/session')));
      const answers = await Promise.all(
        clients.map((client, i) => client.request('POST', '/signup', { email: spellings[i], password: PASSWORD })),
      );
      expect(answers.map((a) => a.status)).toEqual([201, 201]);
      const balances = await Promise.all(spellings.map((email) => balanceOf(gateway, email)));
      expect(balances.filter((b) => b === FIVE_USD)).toHaveLength(1);
      expect(balances.filter((b) => b === 0n)).toHaveLength(1);
    }
  });

  test("an operator's account holds its mailbox's grant too", async () => {
    const name = `op${unique()}`;
    const made = await gateway.admin('POST', '/admin/accounts', { email: `${name}@gmail.com` });
    expect(made.status).toBe(201);
    expect((await new DashboardClient(gateway.url).signUp(`${name}+again@googlemail.com`, PASSWORD)).status).toBe(201);
    expect(await balanceOf(gateway, `${name}+again@googlemail.com`)).toBe(0n);
  });
});

describeEach(DIALECTS)('sign-up grants per mailbox on %s, with SMTP', (dialect) => {
  let gateway: TestGateway;
  let mailbox: Mailbox;
  beforeAll(async () => {
    mailbox = await startMailbox();
    gateway = await startGateway({ dialect, env: { SMTP_URL: mailbox.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await mailbox?.close();
  });

  const tokenIn = (text: string) => /\/dashboard\/verify#([A-Za-z0-9_-]{43})/.exec(text)![1]!;
  async function verify(token: string) {
    const browser = new DashboardClient(gateway.url);
    await browser.request('GET', '/session');
    return browser.request('POST', '/verify', { token });
  }

  test('two spellings verified at the same moment get one grant; a later spelling is not promised one', async () => {
    const name = `vera${unique()}`;
    const spellings = [`${name.slice(0, 2)}.${name.slice(2)}+x@gmail.com`, `${name}@googlemail.com`];
    for (const email of spellings)
      expect((await new DashboardClient(gateway.url).signUp(email, PASSWORD)).status).toBe(202);
    const mails = await Promise.all(spellings.map((email) => mailbox.next(email)));
    for (const mail of mails) expect(mail.text).toContain('5 USD of free credit');
    const verified = await Promise.all(mails.map((mail) => verify(tokenIn(mail.text))));
    expect(verified.map((v) => v.status)).toEqual([200, 200]);
    const balances = await Promise.all(spellings.map((email) => balanceOf(gateway, email)));
    expect(balances.sort()).toEqual([0n, FIVE_USD]);

    const late = `${name}+later@gmail.com`;
    expect((await new DashboardClient(gateway.url).signUp(late, PASSWORD)).status).toBe(202);
    const mail = await mailbox.next(late);
    expect(mail.text).not.toContain('free credit');
    expect((await verify(tokenIn(mail.text))).status).toBe(200);
    expect(await balanceOf(gateway, late)).toBe(0n);
  });
});

describeEach(DIALECTS)('the migration on %s', (dialect) => {
  test('enters the mailboxes of existing accounts with a grant, the oldest holding a shared one', async () => {
    const database = await createTestDatabase(dialect);
    const { db } = connect({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
    try {
      await migrateTo(db, '012_pending_purchases');
      const accounts = [
        ['acct_old', 'a.b+x@gmail.com', 1, true],
        ['acct_new', 'ab@googlemail.com', 2, true],
        ['acct_other', 'carol@example.com', 3, true],
        ['acct_none', 'dave@example.com', 4, false],
      ] as const;
      for (const [id, email, at, granted] of accounts) {
        await db
          .insertInto('accounts')
          .values({ id, email, plan: 'free', balance_nano: 0n, version: 0n, settings: '{}', created_at: at })
          .execute();
        if (granted)
          await db
            .insertInto('ledger')
            .values({
              id: `led_${id}`,
              account_id: id,
              kind: 'grant',
              amount_nano: FIVE_USD,
              balance_after_nano: FIVE_USD,
              created_at: at,
            })
            .execute();
      }
      expect(await migrateToLatest(db)).toContain('013_signup_grant_mailboxes');
      const rows = await db
        .selectFrom('signup_grant_mailboxes')
        .select(['mailbox', 'account_id'])
        .orderBy('mailbox')
        .execute();
      expect(rows).toEqual([
        { mailbox: 'ab@gmail.com', account_id: 'acct_old' },
        { mailbox: 'carol@example.com', account_id: 'acct_other' },
      ]);
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
