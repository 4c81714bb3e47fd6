/** The `tollgate` CLI run for real, as a child process, against SQLite and PostgreSQL. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { cli, json } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { startMockStripe } from '../support/mock-stripe.js';
import { needsPostgres } from '../support/backends.js';

describe('tollgate CLI on SQLite', () => {
  let db: TestDatabase;
  let dir: string;
  let accountId: string;
  let liveKey: string;
  let projectKeyId: string;
  let revokedKey: string;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    dir = db.dataDir;
  });
  afterAll(() => db.drop());

  it('migrate applies the schema to a fresh database', async () => {
    const run = await cli(dir, ['migrate']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('001_initial');
  });

  it('accounts create prints the account and its live key once', async () => {
    const run = await cli(dir, ['accounts', 'create', '--email', 'ada@example.com']);
    expect(run.code).toBe(0);
    liveKey = /(tg-live-\S+)/.exec(run.stdout)![1]!;
    accountId = /(acct_\S+)/.exec(run.stdout)![1]!;
    expect(run.stdout).toContain('$5.00');
    expect(run.stdout).toContain('shown once');
  });

  it('accounts list --json contains the account', async () => {
    const list = await json(dir, ['accounts', 'list']);
    expect(list.data).toContainEqual(
      expect.objectContaining({ id: accountId, email: 'ada@example.com', plan: 'free' }),
    );
  });

  it('keys create makes a project test key; revoke shows up in keys list', async () => {
    const created = await json(dir, [
      'keys',
      'create',
      '--account',
      accountId,
      '--env',
      'test',
      '--permissions',
      'project',
      '--models',
      'sandbox/echo',
      '--spend-limit',
      '1',
    ]);
    expect(created).toMatchObject({
      account_id: accountId,
      environment: 'test',
      permissions: 'project',
      models: ['sandbox/echo'],
      spend_limit: 1,
      revoked: false,
    });
    expect(created.key).toMatch(/^tg-test-/);
    projectKeyId = created.id;
    revokedKey = created.key;

    const revoke = await cli(dir, ['keys', 'revoke', projectKeyId]);
    expect(revoke.code).toBe(0);
    const keys = await json(dir, ['keys', 'list', '--account', accountId]);
    expect(keys.data.find((k: any) => k.id === projectKeyId)).toMatchObject({ revoked: true });
    expect(keys.data.find((k: any) => k.id !== projectKeyId)).toMatchObject({ revoked: false, environment: 'live' });
    expect(JSON.stringify(keys)).not.toContain(created.key);
  });

  it('credits add tops up, corrections stop at zero, and the ledger sums to the balance', async () => {
    const topUp = await cli(dir, ['credits', 'add', '--account', accountId, '--amount', '2.5', '--note', 'invoice 7']);
    expect(topUp.code).toBe(0);
    expect(topUp.stdout).toContain('balance is now $7.50');

    const correction = await json(dir, ['credits', 'add', '--account', accountId, '--amount', '-100']);
    expect(correction).toMatchObject({ amount: -7.5, balance: { credits: 0 } });

    const shown = await json(dir, ['credits', 'show', '--account', accountId]);
    expect(shown.balance.credits).toBe(0);
    expect(shown.ledger.map((e: any) => e.kind)).toEqual(['correction', 'topup', 'grant']);
    expect(shown.ledger.reduce((sum: number, e: any) => sum + e.amount, 0)).toBe(0);
  });

  it('accounts update --rpm is reflected in accounts show', async () => {
    const update = await cli(dir, ['accounts', 'update', accountId, '--rpm', '5', '--daily-limit', 'none']);
    expect(update.code).toBe(0);
    const shown = await json(dir, ['accounts', 'show', accountId]);
    expect(shown.overrides).toEqual({ requests_per_minute: 5, tokens_per_minute: null, daily_limit: 'none' });
    expect(shown.limits).toMatchObject({ requests_per_minute: 5, daily_limit: null });
    expect(shown.keys).toHaveLength(2);
  });

  it('accounts update --invoice and --auto-recharge put an account on invoice billing within the limits', async () => {
    const shown = await json(dir, ['accounts', 'update', accountId, '--invoice', '500', '--auto-recharge', '1:20']);
    expect(shown).toMatchObject({
      billing: { processor: 'invoice', monthly_ceiling: 500 },
      auto_recharge: { enabled: true, threshold: 1, amount: 20 },
    });
    const over = await cli(dir, ['accounts', 'update', accountId, '--auto-recharge', '1:1000.01']);
    expect([over.code, over.stderr]).toEqual([1, expect.stringMatching(/auto_recharge\.amount.*max_amount/)]);
    const ended = await json(dir, ['accounts', 'update', accountId, '--invoice', 'none']);
    expect(ended).toMatchObject({ billing: null, auto_recharge: { enabled: false } });
  });

  it('models --json lists the sandbox as active and unconfigured providers as inactive', async () => {
    const models = await json(dir, ['models']);
    expect(models.data.find((m: any) => m.id === 'sandbox/echo').status.active).toBe(true);
    const openai = models.data.find((m: any) => m.provider.id === 'openai');
    expect(openai.status).toMatchObject({ active: false, message: expect.stringContaining('OPENAI_API_KEY') });
  });

  it('a bad amount exits 1 naming amount', async () => {
    const run = await cli(dir, ['credits', 'add', '--account', accountId, '--amount', '1.0000000001']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^tollgate: .*amount/);
  });

  it('an invalid configuration exits 1 naming the field', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'server: {port: "x"}\n');
    const run = await cli(dir, ['accounts', 'list'], { TOLLGATE_CONFIG: file });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^tollgate: .*server\.port/);
  });

  it('a key created by the CLI authenticates against the gateway; a revoked one does not', async () => {
    const config = loadConfig({
      env: { TOLLGATE_DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'silent' },
      file: undefined,
    });
    const app = await createApp(config);
    try {
      const url = await app.listen();
      const credits = await fetch(`${url}/v1/credits`, { headers: { authorization: `Bearer ${liveKey}` } });
      expect(credits.status).toBe(200);
      const revoked = await fetch(`${url}/v1/credits`, { headers: { authorization: `Bearer ${revokedKey}` } });
      expect(revoked.status).toBe(401);
    } finally {
      await app.close();
    }
  });

  it('purchases list shows the purchases bought through the gateway, the paid one with its Stripe payment and receipt', async () => {
    const stripe = await startMockStripe();
    const env = { TOLLGATE_DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'silent', ...stripe.env };
    const app = await createApp(loadConfig({ env, file: undefined }));
    let paidId: string;
    let pendingId: string;
    try {
      const url = await app.listen();
      const buy = async (amount: number) => {
        const response = await fetch(`${url}/v1/credits/purchases`, {
          method: 'POST',
          headers: { authorization: `Bearer ${liveKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ amount }),
        });
        return ((await response.json()) as { id: string }).id;
      };
      paidId = await buy(20);
      pendingId = await buy(6);
      const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === paidId)!;
      expect(
        (await stripe.deliver(url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
      ).toBe(200);
    } finally {
      await app.close();
    }

    const listed = await json(dir, ['purchases', 'list', '--account', accountId]);
    expect(listed.data.map((p: any) => [p.id, p.amount, p.status])).toEqual([
      [pendingId, 6, 'pending'],
      [paidId, 20, 'paid'],
    ]);
    const table = await cli(dir, ['purchases', 'list', '--account', accountId]);
    expect(table.code).toBe(0);
    const paidLine = table.stdout.split('\n').find((line) => line.startsWith(paidId))!;
    expect(paidLine).toMatch(/\$20\.00\s+paid\s+.*\bpi_\w+\s+https:\/\/pay\.stripe\.test\/receipts\//);
    expect(table.stdout.split('\n').find((line) => line.startsWith(pendingId))).toMatch(/\$6\.00\s+pending\s/);
    const unknown = await cli(dir, ['purchases', 'list', '--account', 'acct_nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^tollgate: .*acct_nope/);

    // A refund through Stripe debits the ledger; without Stripe's settings the CLI says what is missing.
    try {
      const before = (await json(dir, ['accounts', 'show', accountId])).balance.credits as number;
      const refunded = await json(
        dir,
        ['purchases', 'refund', paidId, '--account', accountId, '--amount', '2.5'],
        stripe.env,
      );
      expect(refunded).toMatchObject({
        object: 'credit_refund',
        status: 'succeeded',
        amount_refunded: 2.5,
        debited: 2.5,
      });
      expect(refunded.balance.credits).toBeCloseTo(before - 2.5, 9);
      expect(stripe.refunds.map((r) => r.amount)).toEqual([250]);
      const noStripe = await cli(dir, ['purchases', 'refund', paidId, '--account', accountId]);
      expect(noStripe.code).toBe(1);
      expect(noStripe.stderr).toMatch(/STRIPE_SECRET_KEY/);
    } finally {
      await stripe.close();
    }
  });

  it('keys create and keys update set and clear the governance fields; bad values exit 1 naming the field', async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const created = await json(dir, [
      'keys',
      'create',
      '--account',
      accountId,
      '--permissions',
      'management',
      '--name',
      'provisioner',
      '--limit',
      '3.25',
      '--limit-reset',
      'monthly',
      '--expires-at',
      expires,
      '--rpm',
      '5',
      '--allowed-ips',
      '10.1.2.3/16, 2001:db8::1',
    ]);
    expect(created).toMatchObject({
      permissions: 'management',
      name: 'provisioner',
      limit: 3.25,
      limit_reset: 'monthly',
      expires_at: expires,
      requests_per_minute: 5,
      tokens_per_minute: null,
      allowed_ips: ['10.1.0.0/16', '2001:db8::1/128'],
      owner: null,
    });
    const updated = await json(dir, [
      'keys',
      'update',
      created.id,
      '--limit',
      'none',
      '--expires-at',
      'never',
      '--rpm',
      'none',
      '--tpm',
      '100',
      '--allowed-ips',
      'none',
    ]);
    expect(updated).toMatchObject({
      id: created.id,
      limit: null,
      limit_reset: 'monthly',
      expires_at: null,
      requests_per_minute: null,
      tokens_per_minute: 100,
      allowed_ips: [],
    });
    const table = await cli(dir, ['keys', 'list', '--account', accountId]);
    expect(table.stdout).toContain('provisioner');
    // The account allows 5 requests a minute (accounts update --rpm above): a key may not have more.
    for (const [args, param] of [
      [['--rpm', '6'], 'requests_per_minute'],
      [['--allowed-ips', '10.0.0.0/99'], 'allowed_ips'],
      [['--limit-reset', 'hourly'], 'limit_reset'],
      [['--expires-at', 'soon'], 'expires_at'],
    ] as const) {
      const run = await cli(dir, ['keys', 'update', created.id, ...args]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain(param);
    }
    const nothing = await cli(dir, ['keys', 'update', created.id]);
    expect([nothing.code, nothing.stderr]).toEqual([1, expect.stringContaining('nothing to update')]);
  });
});

needsPostgres('tollgate CLI on PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('postgres');
  });
  afterAll(() => db.drop());

  it('accounts create and credits add work against DATABASE_URL', async () => {
    const env = { DATABASE_URL: db.databaseUrl! };
    const account = await json(
      db.dataDir,
      ['accounts', 'create', '--email', 'pg@example.com', '--plan', 'pay_as_you_go'],
      env,
    );
    expect(account).toMatchObject({ plan: 'pay_as_you_go', balance: { credits: 5 } });
    expect(account.api_key).toMatch(/^tg-live-/);
    const credits = await json(db.dataDir, ['credits', 'add', '--account', account.id, '--amount', '0.000000001'], env);
    expect(credits).toMatchObject({ amount: 0.000000001, balance: { credits: 5.000000001 } });
  });
});
