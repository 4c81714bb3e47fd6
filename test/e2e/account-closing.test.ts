/**
 * An owner closes an account: every key stops on every replica, the members, webhooks and invitations go, and the
 * money stays accounted for (balance, ledger, audit log), readable by the operator. Only an owner may, and only
 * with the account's email typed. On SQLite (one process) and on PostgreSQL + Redis with two replicas.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { describeEach } from '../support/backends.js';
import { tempDir } from '../support/databases.js';
import { startGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { startReplicas } from '../support/replicas.js';

interface Stage {
  urls: string[];
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

const CASES = [
  {
    name: 'SQLite',
    dialect: 'sqlite',
    env: {},
    start: async (): Promise<Stage> => {
      const gateway = await startGateway({ overrides: { webhooks: { allow_private_urls: true } } });
      return { urls: [gateway.url], admin: (m, p, b) => gateway.admin(m, p, b), stop: () => gateway.close() };
    },
  },
  {
    name: 'PostgreSQL + Redis, two replicas',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL },
    start: async (): Promise<Stage> => {
      const config = join(tempDir(), 'tollgate.config.yaml');
      writeFileSync(config, 'webhooks:\n  allow_private_urls: true\n');
      const replicas = await startReplicas(2, { env: { TOLLGATE_CONFIG: config } });
      return { urls: replicas.urls, admin: (m, p, b) => replicas.admin(m, p, b), stop: () => replicas.stop() };
    },
  },
];

const ask = { model: 'sandbox/echo', messages: [{ role: 'user' as const, content: 'still open?' }], max_tokens: 8 };

/** The status of a chat request with `key` (200, or the SDK error's status). */
async function chatStatus(key: string, url: string): Promise<number> {
  const client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
  try {
    await client.chat.completions.create(ask);
    return 200;
  } catch (error) {
    return (error as { status?: number }).status ?? 0;
  }
}

describeEach(CASES)('closing an account on $name', ({ start }) => {
  let stage: Stage;
  const url = (i: number) => stage.urls[i % stage.urls.length]!;
  const ownerEmail = uniqueEmail('closing-owner');
  const adminEmail = uniqueEmail('closing-admin');
  let owner: DashboardClient;
  let admin: DashboardClient;
  let accountId = '';
  let ownerUserId = '';
  let ownerKey = { id: '', key: '' };
  let adminKey = { id: '', key: '' };
  let webhookId = '';
  let invitationId = '';

  beforeAll(async () => {
    stage = await start();
    owner = new DashboardClient(url(0));
    const signedUp = await owner.signUp(ownerEmail);
    expect(signedUp.status, JSON.stringify(signedUp.body)).toBe(201);
    accountId = signedUp.body.account_id;
    ownerKey = { id: signedUp.body.first_key.id, key: signedUp.body.first_key.key };
    ownerUserId = (await owner.request('GET', '/session')).body.user.id;
    expect((await stage.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: 10 })).status).toBe(200);

    const invited = await owner.request('POST', '/members/invitations', { email: adminEmail, role: 'admin' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    admin = new DashboardClient(url(1));
    await admin.request('GET', '/session');
    const token = new URL(invited.body.link).hash.slice(1);
    const accepted = await admin.request('POST', '/invitations/accept', { token, password: 'admin pass phrase 42' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const made = await admin.request('POST', '/keys', { name: 'admin app', permissions: 'project' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    adminKey = { id: made.body.id, key: made.body.key };

    const hook = await owner.request('POST', '/webhooks', {
      // Nothing listens there: its deliveries fail until the closing deletes them.
      url: 'http://127.0.0.1:9/hook',
      secret: 'whsec_closing_test_secret_0123456789',
      events: [{ type: 'llm.completion' }],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    webhookId = hook.body.id;
    const pending = await owner.request('POST', '/members/invitations', {
      email: uniqueEmail('never-joins'),
      role: 'member',
    });
    expect(pending.status).toBe(201);
    invitationId = pending.body.id;
    // One paid request, so the ledger holds a debit to keep.
    expect(await chatStatus(ownerKey.key, url(1))).toBe(200);
  }, 120_000);
  afterAll(() => stage?.stop());

  it('lets only the owner close it, and only with its email typed', async () => {
    const byAdmin = await admin.request('POST', '/account/close', { confirm: ownerEmail });
    expect([byAdmin.status, byAdmin.body.error?.type]).toEqual([403, 'permission_error']);
    const mistyped = await owner.request('POST', '/account/close', { confirm: 'someone-else@example.com' });
    expect([mistyped.status, mistyped.body.error?.param]).toEqual([400, 'confirm']);
    expect(mistyped.body.error.message).toContain(ownerEmail);
    expect(await chatStatus(ownerKey.key, url(0))).toBe(200);
    expect(await chatStatus(adminKey.key, url(1))).toBe(200);
  });

  it('stops every key on every replica and removes the people, keeping the money accounted for', async () => {
    const before = (await stage.admin('GET', `/admin/accounts/${accountId}`)).body;
    const closed = await owner.request('POST', '/account/close', { confirm: ownerEmail.toUpperCase() });
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body).toMatchObject({ object: 'account', id: accountId, closed: true, account_id: null });

    // The keys' cached copies are dropped everywhere: a refusal within the cache's second at most.
    for (const [key, at] of [
      [ownerKey.key, url(1)],
      [adminKey.key, url(0)],
    ] as const) {
      let status = 0;
      for (let i = 0; i < 30 && status !== 401; i++) {
        status = await chatStatus(key, at);
        if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(401);
    }

    // The owner's session ended; the admin's no longer opens the account, and signing in finds no account.
    expect((await owner.request('GET', '/session')).body.signed_in).toBe(false);
    expect((await admin.request('GET', '/overview')).status).toBe(401);
    const again = new DashboardClient(url(0));
    await again.request('GET', '/session');
    const signIn = await again.signIn(adminEmail, 'admin pass phrase 42');
    expect([signIn.status, signIn.body.error?.type]).toEqual([403, 'permission_error']);

    // The operator still sees the account: closed, same balance, every key revoked, the ledger whole.
    const after = (await stage.admin('GET', `/admin/accounts/${accountId}`)).body;
    expect(after.closed_at).toBe(closed.body.closed_at);
    expect(after.balance).toEqual(before.balance);
    expect(after.keys.map((k: { revoked: boolean }) => k.revoked)).toEqual([true, true]);
    const ledger = (await stage.admin('GET', `/admin/accounts/${accountId}/ledger`)).body;
    expect(ledger.data.map((e: { kind: string }) => e.kind)).toEqual(expect.arrayContaining(['topup', 'debit']));

    // One audit entry says who closed it, from where, and what was removed.
    const audit = (await stage.admin('GET', `/admin/accounts/${accountId}/audit?action=account.close`)).body;
    expect(audit.data).toHaveLength(1);
    const [entry] = audit.data;
    expect([entry.actor, entry.ip]).toEqual([{ type: 'user', id: ownerUserId, email: ownerEmail }, '127.0.0.1']);
    expect(entry.before.members.map((m: { email: string }) => m.email).sort()).toEqual([ownerEmail, adminEmail].sort());
    expect(entry.before.keys.sort()).toEqual([ownerKey.id, adminKey.id].sort());
    expect(entry.before.webhooks).toEqual([webhookId]);
    expect(entry.before.invitations).toEqual([invitationId]);
    expect(entry.after.balance).toBe(entry.before.balance);

    // Nobody can give it a key again.
    const key = await stage.admin('POST', `/admin/accounts/${accountId}/keys`, { name: 'revive' });
    expect([key.status, key.body.error?.param]).toEqual([400, 'account_id']);
  });
});
