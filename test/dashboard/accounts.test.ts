/**
 * A person in several accounts: the session names the user, its role and what the role may do, lists the user's
 * accounts, and switches between them (only to accounts the user belongs to); closing one moves the session to
 * another. On SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { addMember } from './team.js';

describeEach(DIALECTS)('account switcher on %s', (dialect) => {
  let gateway: TestGateway;
  const team = { accountId: '', email: uniqueEmail('team') };
  const person = { accountId: '', email: uniqueEmail('person'), password: 'correct horse battery' };
  let client: DashboardClient;

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    team.accountId = (await new DashboardClient(gateway.url).signUp(team.email)).body.account_id;
    person.accountId = (await new DashboardClient(gateway.url).signUp(person.email, person.password)).body.account_id;
    await addMember(gateway, team.accountId, person.accountId.replace(/^acct_/, 'usr_'), 'member');
    client = new DashboardClient(gateway.url);
    expect((await client.signIn(person.email, person.password)).status).toBe(200);
  });
  afterAll(() => gateway?.close());

  test('signed in, the session looks at the account the user owns and lists both', async () => {
    const { body } = await client.request('GET', '/session');
    expect(body).toMatchObject({
      signed_in: true,
      user: { email: person.email },
      account: { id: person.accountId },
      role: 'owner',
      capabilities: expect.arrayContaining(['members', 'webhooks', 'billing']),
    });
    expect(body.accounts).toEqual([
      { account_id: person.accountId, email: person.email, role: 'owner' },
      { account_id: team.accountId, email: team.email, role: 'member' },
    ]);
    expect((await client.request('GET', '/accounts')).body.data).toEqual(body.accounts);
  });

  test("switching to the team shows the team's data under the member's role", async () => {
    const switched = await client.request('POST', '/session/account', { account_id: team.accountId });
    expect(switched.body).toEqual({
      object: 'session',
      account_id: team.accountId,
      role: 'member',
      capabilities: ['own_keys', 'usage'],
    });
    const session = (await client.request('GET', '/session')).body;
    expect([session.account.id, session.role, session.user.email]).toEqual([team.accountId, 'member', person.email]);
    expect((await client.request('GET', '/overview')).status).toBe(200);
    const webhooks = await client.request('GET', '/webhooks');
    expect([webhooks.status, webhooks.body.error.message]).toEqual([
      403,
      'Your role in this account (member) does not allow this (webhooks)',
    ]);
    // And back to its own account, where it is the owner again.
    await client.request('POST', '/session/account', { account_id: person.accountId });
    expect((await client.request('GET', '/webhooks')).status).toBe(200);
  });

  test('an account the user is not a member of is refused, and the session stays where it was', async () => {
    const stranger = (await new DashboardClient(gateway.url).signUp(uniqueEmail('stranger'))).body.account_id;
    const refused = await client.request('POST', '/session/account', { account_id: stranger });
    expect([refused.status, refused.body.error.message]).toEqual([403, 'You are not a member of that account']);
    const missing = await client.request('POST', '/session/account', {});
    expect([missing.status, missing.body.error.param]).toEqual([400, 'account_id']);
    expect((await client.request('GET', '/session')).body.account.id).toBe(person.accountId);
  });

  test('a user who left its own account signs in to the team; with no account left, sign-in is refused', async () => {
    const email = uniqueEmail('wanderer');
    const own = new DashboardClient(gateway.url);
    const ownAccount = (await own.signUp(email, person.password)).body.account_id;
    const userId = ownAccount.replace(/^acct_/, 'usr_');
    await addMember(gateway, ownAccount, team.accountId.replace(/^acct_/, 'usr_'), 'owner');
    await addMember(gateway, team.accountId, userId, 'member');
    expect((await own.request('POST', '/members/leave')).status).toBe(200);
    const signedIn = await new DashboardClient(gateway.url).signIn(email, person.password);
    expect([signedIn.status, signedIn.body.account_id]).toEqual([200, team.accountId]);
    // The team removes it (as the team's owner would): no account left.
    const owner = new DashboardClient(gateway.url);
    await owner.signIn(team.email, 'correct horse battery');
    expect((await owner.request('DELETE', `/members/${userId}`)).status).toBe(200);
    const refused = await new DashboardClient(gateway.url).signIn(email, person.password);
    expect([refused.status, refused.body.error.message]).toEqual([
      403,
      'You are no longer a member of any account: ask an owner or admin to invite you again',
    ]);
  });

  test('an owner who closes its own account is moved to the team it also belongs to', async () => {
    const email = uniqueEmail('closer');
    const closer = new DashboardClient(gateway.url);
    const closing = (await closer.signUp(email, person.password)).body.account_id;
    await addMember(gateway, team.accountId, closing.replace(/^acct_/, 'usr_'), 'billing');
    const closed = await closer.request('POST', '/account/close', { confirm: email });
    expect([closed.status, closed.body.id, closed.body.account_id]).toEqual([200, closing, team.accountId]);
    const session = (await closer.request('GET', '/session')).body;
    expect([session.account.id, session.role, session.accounts]).toEqual([
      team.accountId,
      'billing',
      [{ account_id: team.accountId, email: team.email, role: 'billing' }],
    ]);
    const again = await closer.request('POST', '/session/account', { account_id: closing });
    expect(again.status).toBe(403);
  });
});
