/**
 * `tollgate doctor` and `tollgate config`, run as child processes against real services, a local Anthropic-format
 * server and a local server speaking Stripe's API.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editorSchema, EDITOR_SCHEMA_FILE } from '../../src/config/editor-schema.js';
import { cli, json } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { MOCK_SECRET_KEY, startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { reachable } from '../support/backends.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const byName = (report: any, name: string) => report.checks.find((c: any) => c.check === name);

describe('tollgate doctor', () => {
  let db: TestDatabase;
  let anthropic: MockAnthropic;
  let groq: MockOpenAI;
  let stripe: MockStripe;
  // `doctor` without settings after `migrate`: the tests that read a check of the plain defaults share this one run.
  let plain: Promise<any> | undefined;
  const plainReport = () => (plain ??= json(db.dataDir, ['doctor']));

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    anthropic = await startMockAnthropic({ apiKey: 'sk-ant-good' });
    groq = await startMockOpenAI({ apiKey: 'gsk-good' });
    stripe = await startMockStripe();
  });
  afterAll(async () => {
    await anthropic.close();
    await groq.close();
    await stripe.close();
    await db.drop();
  });

  it('passes on the embedded defaults, says migrations are pending and that only the sandbox answers', async () => {
    const report = await json(db.dataDir, ['doctor']);
    expect(report.ok).toBe(true);
    expect(byName(report, 'configuration').outcome).toBe('ok');
    expect(byName(report, 'database')).toMatchObject({ outcome: 'warn' });
    expect(byName(report, 'database').detail).toContain('003_dashboard');
    expect(byName(report, 'redis').outcome).toBe('skip');
    expect(byName(report, 'providers').detail).toContain('OPENAI_API_KEY');
    await cli(db.dataDir, ['migrate']);
    expect(byName(await plainReport(), 'database').outcome).toBe('ok');
  });

  it('warns that a public deployment should configure SMTP while sign-ups are credited unverified', async () => {
    const embedded = byName(await plainReport(), 'sign-up');
    expect(embedded.outcome).toBe('warn');
    expect(embedded.detail).toContain('SMTP_URL not set');
    const smtp = byName(
      await json(db.dataDir, ['doctor'], {
        SMTP_URL: 'smtp://mailer:secret@127.0.0.1:2525',
        TOLLGATE_PUBLIC_URL: 'https://gateway.example',
      }),
      'sign-up',
    );
    expect(smtp.outcome).toBe('ok');
    expect(smtp.detail).toContain('verified email');
    expect(smtp.detail).not.toContain('secret');
  });

  it('warns while the key-hashing secret is stored in the database, not given by TOLLGATE_KEY_SECRET', async () => {
    const stored = byName(await plainReport(), 'key secret');
    expect(stored.outcome).toBe('warn');
    expect(stored.detail).toContain('TOLLGATE_KEY_SECRET not set');
    const given = byName(
      await json(db.dataDir, ['doctor'], { TOLLGATE_KEY_SECRET: 'a-secret-kept-outside-the-db-0123456789' }),
      'key secret',
    );
    expect(given.outcome).toBe('ok');
    expect(given.detail).not.toContain('0123456789');
  });

  it.skipIf(!reachable('postgres', 'redis'))(
    'checks PostgreSQL and Redis for real and names an unreachable Redis (PostgreSQL + Redis)',
    async () => {
      const pg = await createTestDatabase('postgres');
      try {
        const good = await json(db.dataDir, ['doctor'], { DATABASE_URL: pg.databaseUrl!, REDIS_URL: REDIS_TEST_URL });
        expect(byName(good, 'database').detail).toMatch(/^postgres at /);
        expect(byName(good, 'redis').outcome).toBe('ok');
        const run = await cli(db.dataDir, ['doctor', '--json'], { REDIS_URL: 'redis://127.0.0.1:1' });
        expect(run.code).toBe(1);
        expect(byName(JSON.parse(run.stdout), 'redis')).toMatchObject({ outcome: 'fail' });
      } finally {
        await pg.drop();
      }
    },
  );

  it('probes each provider: a good key, a refused key and an unreachable address', async () => {
    const good = await json(db.dataDir, ['doctor'], {
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: 'sk-ant-good',
    });
    expect(byName(good, 'provider anthropic')).toMatchObject({ outcome: 'ok' });
    expect(anthropic.requests.at(-1)).toMatchObject({ method: 'GET' });

    const refused = await cli(db.dataDir, ['doctor'], {
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: 'sk-ant-wrong',
    });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(
      /provider anthropic\s+FAIL\s+.*the key was refused \(HTTP 401\): check ANTHROPIC_API_KEY/,
    );

    const run = await cli(db.dataDir, ['doctor', '--json'], {
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1/v1',
      ANTHROPIC_API_KEY: 'k',
    });
    expect(run.code).toBe(1);
    expect(byName(JSON.parse(run.stdout), 'provider anthropic').detail).toMatch(/unreachable/);
  });

  it('probes an OpenAI-compatible provider through its model list', async () => {
    const good = await json(db.dataDir, ['doctor'], { GROQ_BASE_URL: groq.url, GROQ_API_KEY: 'gsk-good' });
    expect(byName(good, 'provider groq')).toMatchObject({ outcome: 'ok' });
    const refused = await cli(db.dataDir, ['doctor', '--json'], { GROQ_BASE_URL: groq.url, GROQ_API_KEY: 'gsk-wrong' });
    expect(refused.code).toBe(1);
    expect(byName(JSON.parse(refused.stdout), 'provider groq').detail).toContain('check GROQ_API_KEY');
  });

  it('says purchasing is off without a Stripe key; with one, checks it at Stripe and says test mode', async () => {
    const off = await plainReport();
    expect(off.checks.filter((c: any) => c.check.startsWith('stripe'))).toEqual([
      {
        check: 'stripe',
        outcome: 'skip',
        detail: expect.stringContaining('STRIPE_SECRET_KEY not set: purchasing is off'),
      },
    ]);

    const test = await json(db.dataDir, ['doctor'], stripe.env);
    expect(test.ok).toBe(true);
    expect(byName(test, 'stripe')).toMatchObject({
      outcome: 'warn',
      detail: expect.stringMatching(new RegExp(`^test mode \\(sk_test_…\\): ${stripe.url} accepted the key`)),
    });
    expect(byName(test, 'stripe webhooks')).toMatchObject({ outcome: 'ok' });
    // One cheap read with the key: a PaymentIntent that does not exist (404 means the key was accepted).
    expect(stripe.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /v1/payment_intents/pi_tollgate_doctor_probe',
    ]);
  });

  it('fails on a Stripe key refused or a Stripe address unreachable, warns without the webhook secret, never prints the key', async () => {
    // A refused key fails; a missing webhook secret is a warning of its own.
    const refused = await cli(db.dataDir, ['doctor'], {
      STRIPE_SECRET_KEY: 'sk_test_wrong_0123456789abcdef',
      STRIPE_API_BASE: stripe.url,
    });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/stripe\s+FAIL\s+.*the key was refused \(HTTP 401\): check STRIPE_SECRET_KEY/);
    expect(refused.stdout).toMatch(
      /stripe webhooks\s+WARN\s+STRIPE_WEBHOOK_SECRET not set: .*refunds and disputes are never seen/,
    );
    expect(refused.stdout).not.toContain('0123456789abcdef');

    const down = await cli(db.dataDir, ['doctor', '--json'], { ...stripe.env, STRIPE_API_BASE: 'http://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(byName(JSON.parse(down.stdout), 'stripe')).toMatchObject({
      outcome: 'fail',
      detail: expect.stringMatching(/^http:\/\/127\.0\.0\.1:1: unreachable: .*ECONNREFUSED/),
    });
    expect(down.stdout).not.toContain(MOCK_SECRET_KEY);
  });

  it('warns about a live key pointed at another server than Stripe, and does not send it there', async () => {
    let requests = 0;
    const elsewhere = createServer((_req, res) => {
      requests++;
      res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
      const liveKey = 'sk_live_not_for_this_server_0123456789';
      const run = await cli(db.dataDir, ['doctor', '--json'], {
        STRIPE_SECRET_KEY: liveKey,
        STRIPE_API_BASE: base,
        STRIPE_WEBHOOK_SECRET: 'whsec_0123456789',
      });
      expect(run.code).toBe(0);
      const check = byName(JSON.parse(run.stdout), 'stripe');
      expect(check).toMatchObject({
        outcome: 'warn',
        detail: expect.stringContaining(`a live key (sk_live_…) with STRIPE_API_BASE=${base}, which is not Stripe`),
      });
      expect(run.stdout).not.toContain(liveKey);
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it('reports an invalid configuration with the field named, and fails', async () => {
    const file = join(db.dataDir, 'broken.yaml');
    writeFileSync(file, 'plans:\n  free:\n    requests_per_minute: lots\n');
    const run = await cli(db.dataDir, ['doctor'], { TOLLGATE_CONFIG: file });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('plans.free.requests_per_minute');
  });
});

describe('tollgate config', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
  });
  afterAll(() => db.drop());

  it('substitutes ${ENV} in the file, typed, with fallbacks, and names the field of an unset variable', async () => {
    const file = join(db.dataDir, 'env.yaml');
    writeFileSync(
      file,
      'server:\n  port: ${TG_PORT}\n  trust_proxy: ${TG_PROXY:-true}\nadmin_token: "tok-${TG_SECRET}-suffix"\n',
    );
    const merged = await json(db.dataDir, ['config', 'check'], {
      TOLLGATE_CONFIG: file,
      TG_PORT: '9191',
      TG_SECRET: 'abcdefghijklmnop',
    });
    expect(merged.server).toMatchObject({ port: 9191, trust_proxy: true });
    expect(merged.admin_token).toBe('***');
    const run = await cli(db.dataDir, ['config', 'check'], { TOLLGATE_CONFIG: file, TG_PORT: '9191' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('admin_token: environment variable TG_SECRET is not set');
  });

  it('prints the JSON Schema for editors, and the committed copy is current', async () => {
    const run = await cli(db.dataDir, ['config', 'schema']);
    const printed = JSON.parse(run.stdout);
    expect(printed).toEqual(editorSchema());
    expect(printed.properties.server.properties.port).toMatchObject({ type: 'integer', maximum: 65535 });
    expect(printed.properties.server.required).toBeUndefined();
    expect(printed.properties.models.items.required).toContain('id');
    const committed = JSON.parse(readFileSync(new URL(`../../${EDITOR_SCHEMA_FILE}`, import.meta.url), 'utf8'));
    expect(committed, `regenerate with: npx tollgate config schema > ${EDITOR_SCHEMA_FILE}`).toEqual(printed);
  });
});
