/**
 * Invitations without SMTP: the link is shown to the inviter; a new person accepts it with a password and is signed
 * in to the account; an existing person must be signed in as the invited email; revoked, used and unknown links
 * are refused; a removed invited member's key stops working. Every step audited. On SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMailbox, type Mailbox } from '../support/smtp.js';
import { DashboardClient, uniqueEmail } from './client.js';

describeEach(DIALECTS)('dashboard invitations on %s', (dialect) => {
  let gateway: TestGateway;
  let owner: DashboardClient;
  let accountId = '';
  const tokenOf = (link: string) => link.slice(link.indexOf('#') + 1);
  const audit = async (action: string) => gateway.app.storage.audit.list(accountId, { limit: 50, action });

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    owner = new DashboardClient(gateway.url);
    accountId = (await owner.signUp(uniqueEmail('inviter'))).body.account_id;
  });
  afterAll(() => gateway?.close());

  test('a new person accepts with a password, is signed in with its role, and signs in again later', async () => {
    const email = uniqueEmail('newcomer');
    const invited = await owner.request('POST', '/members/invitations', { email, role: 'member' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body).toMatchObject({ email, role: 'member' });
    expect(invited.body.link).toMatch(/\/dashboard\/invite#[A-Za-z0-9_-]{43}$/);
    const pending = await owner.request('GET', '/members/invitations');
    expect(pending.body.data.map((i: { email: string }) => i.email)).toContain(email);

    const guest = new DashboardClient(gateway.url);
    await guest.request('GET', '/session');
    const token = tokenOf(invited.body.link);
    const noPassword = await guest.request('POST', '/invitations/accept', { token });
    expect([noPassword.status, noPassword.body.error.param]).toEqual([400, 'password']);
    const weak = await guest.request('POST', '/invitations/accept', { token, password: 'short' });
    expect([weak.status, weak.body.error.param]).toEqual([400, 'password']);
    const accepted = await guest.request('POST', '/invitations/accept', { token, password: 'a long enough secret' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body).toMatchObject({ signed_in: true, account_id: accountId, role: 'member' });
    const session = await guest.request('GET', '/session');
    expect(session.body).toMatchObject({ account_id: accountId, role: 'member', user: { email } });

    const again = await guest.request('POST', '/invitations/accept', { token, password: 'a long enough secret' });
    expect([again.status, again.body.error.param]).toEqual([400, 'token']);
    const members = await owner.request('GET', '/members');
    expect(members.body.data).toContainEqual(expect.objectContaining({ email, role: 'member' }));
    expect((await owner.request('GET', '/members/invitations')).body.data).toEqual([]);

    const signUp = await new DashboardClient(gateway.url).signUp(email, 'another long secret');
    expect([signUp.status, signUp.body.error.param]).toEqual([400, 'email']);

    const later = new DashboardClient(gateway.url);
    const signedIn = await later.signIn(email, 'a long enough secret');
    expect([signedIn.status, signedIn.body.account_id]).toEqual([200, accountId]);

    const joined = await audit('member.join');
    expect(joined).toContainEqual(
      expect.objectContaining({ actorId: session.body.user.id, after: { email, role: 'member' } }),
    );
    expect(await audit('member.invite')).toContainEqual(
      expect.objectContaining({ targetId: invited.body.id, after: { email, role: 'member' } }),
    );
  });

  test('an existing person accepts only when signed in as the invited email, then switches accounts', async () => {
    const email = uniqueEmail('existing');
    const person = new DashboardClient(gateway.url);
    const ownAccount = (await person.signUp(email)).body.account_id;
    const invited = await owner.request('POST', '/members/invitations', { email, role: 'billing' });
    const token = tokenOf(invited.body.link);

    const stranger = new DashboardClient(gateway.url);
    await stranger.request('GET', '/session');
    const refused = await stranger.request('POST', '/invitations/accept', { token, password: 'a long enough secret' });
    expect([refused.status, refused.body.error.message]).toEqual([403, `Sign in as ${email} to accept`]);

    const accepted = await person.request('POST', '/invitations/accept', { token });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body).toMatchObject({ account_id: accountId, role: 'billing' });
    const session = await person.request('GET', '/session');
    expect(session.body.account_id).toBe(accountId);
    expect(session.body.accounts.map((a: { account_id: string }) => a.account_id).sort()).toEqual(
      [accountId, ownAccount].sort(),
    );
    const back = await person.request('POST', '/session/account', { account_id: ownAccount });
    expect([back.status, back.body.role]).toEqual([200, 'owner']);
  });

  test('a revoked link is refused; only an owner invites an owner; bad input names its param', async () => {
    const email = uniqueEmail('revoked');
    const invited = await owner.request('POST', '/members/invitations', { email, role: 'admin' });
    const revoked = await owner.request('DELETE', `/members/invitations/${invited.body.id}`);
    expect(revoked.status).toBe(200);
    const guest = new DashboardClient(gateway.url);
    await guest.request('GET', '/session');
    const refused = await guest.request('POST', '/invitations/accept', {
      token: tokenOf(invited.body.link),
      password: 'a long enough secret',
    });
    expect([refused.status, refused.body.error.param]).toEqual([400, 'token']);
    expect(await audit('member.invite_revoke')).toContainEqual(expect.objectContaining({ targetId: invited.body.id }));

    const badEmail = await owner.request('POST', '/members/invitations', { email: 'nope', role: 'member' });
    expect([badEmail.status, badEmail.body.error.param]).toEqual([400, 'email']);
    const badRole = await owner.request('POST', '/members/invitations', { email, role: 'king' });
    expect([badRole.status, badRole.body.error.param]).toEqual([400, 'role']);

    // An admin (joined by invitation) may invite, but not an owner.
    const adminEmail = uniqueEmail('admin');
    const adminInvite = await owner.request('POST', '/members/invitations', { email: adminEmail, role: 'admin' });
    const admin = new DashboardClient(gateway.url);
    await admin.request('GET', '/session');
    await admin.request('POST', '/invitations/accept', {
      token: tokenOf(adminInvite.body.link),
      password: 'a long enough secret',
    });
    const ownerByAdmin = await admin.request('POST', '/members/invitations', { email, role: 'owner' });
    expect([ownerByAdmin.status, ownerByAdmin.body.error.message]).toEqual([403, 'Only an owner may invite an owner']);
    expect((await admin.request('POST', '/members/invitations', { email, role: 'member' })).status).toBe(201);
  });
});

describeEach(DIALECTS)('dashboard invitations with SMTP on %s', (dialect) => {
  let gateway: TestGateway;
  let mailbox: Mailbox;
  const linkIn = (text: string, page: string) => {
    const match = new RegExp(`/dashboard/${page}#([A-Za-z0-9_-]{43})`).exec(text);
    if (!match) throw new Error(`no ${page} link in:\n${text}`);
    return match[1]!;
  };

  beforeAll(async () => {
    mailbox = await startMailbox();
    gateway = await startGateway({
      dialect,
      env: { SMTP_URL: mailbox.url, SMTP_FROM: 'tollgate <noreply@x.example>' },
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await mailbox?.close();
  });

  test('the link is emailed, not shown; the new person joins with a verified email', async () => {
    const ownerEmail = uniqueEmail('smtp-owner');
    const owner = new DashboardClient(gateway.url);
    expect((await owner.signUp(ownerEmail)).status).toBe(202);
    await owner.request('GET', '/session');
    const verified = await owner.request('POST', '/verify', {
      token: linkIn((await mailbox.next(ownerEmail)).text, 'verify'),
    });
    expect(verified.body.signed_in).toBe(true);

    const email = uniqueEmail('smtp-guest');
    const invited = await owner.request('POST', '/members/invitations', { email, role: 'billing' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    expect(invited.body.link).toBeUndefined();
    const mail = await mailbox.next(email);
    expect(mail.text).toContain(`join the tollgate account of ${ownerEmail} as billing`);

    const guest = new DashboardClient(gateway.url);
    await guest.request('GET', '/session');
    const accepted = await guest.request('POST', '/invitations/accept', {
      token: linkIn(mail.text, 'invite'),
      password: 'a long enough secret',
    });
    expect([accepted.status, accepted.body.role]).toEqual([200, 'billing']);
    expect((await gateway.app.storage.users.byEmail(email))?.emailStatus).toBe('verified');
    const again = await new DashboardClient(gateway.url).signIn(email, 'a long enough secret');
    expect([again.status, again.body.account_id]).toEqual([200, verified.body.account_id]);
  });
});
