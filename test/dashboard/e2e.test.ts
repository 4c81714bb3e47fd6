/**
 * The dashboard as a user drives it, in headless Chromium against a real gateway: sign up -> 5 USD -> create a
 * key -> shown once -> the openai SDK uses it -> lower balance and the request in usage -> revoke ->
 * AuthenticationError. Screenshots of every page go to test-results/dashboard/.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { buildBundle, launch, screenshot, unlabelledControls, watchErrors, watchForeignRequests } from './browser.js';

let gateway: TestGateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let foreign: string[];
const email = `e2e-${Date.now()}@example.com`;
const password = 'a long enough passphrase';

beforeAll(async () => {
  await buildBundle();
  // Webhook endpoints on this machine are allowed here, as the operator of a test gateway would (contract).
  [gateway, browser] = await Promise.all([
    startGateway({ overrides: { webhooks: { allow_private_urls: true, poll_interval_ms: 100 } } }),
    launch(),
  ]);
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gateway.url });
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  errors = watchErrors(page);
  foreign = watchForeignRequests(page, gateway.url);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

const balance = () => page.getByTestId('balance');
const usdText = (text: string | null) => Number((text ?? '').replace(/[$,]/g, ''));
/** The keys as the signed-in page's own fetch sees them (browser code, passed as text: no DOM types here). */
const listKeys = () =>
  page.evaluate<{ data: Array<{ id: string; revoked: boolean }> }>(
    "fetch('/dashboard/api/keys').then((r) => r.json())",
  );

test('sign up, spend through a new key, watch usage, revoke it', { timeout: 60_000 }, async () => {
  await page.goto(`${gateway.url}/`);
  await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard/signin');
  await screenshot(page, '01-signin');

  await page.getByRole('link', { name: 'Create an account' }).click();
  await page.getByText('New accounts start with 5 USD of free credit.').waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Confirm password').fill(password);
  expect(await unlabelledControls(page)).toEqual([]);
  await screenshot(page, '02-signup');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { name: 'Your first API key' }).waitFor();
  await screenshot(page, '03-keys-first-key');
  await page.getByRole('button', { name: 'I have stored the key' }).click();

  await page.getByRole('link', { name: 'Credits & usage' }).click();
  await expect.poll(() => balance().textContent()).toBe('$5.00');
  await page.locator('#daily-chart').waitFor();
  await screenshot(page, '04-credits-new-account');

  await page.getByRole('link', { name: 'API Keys' }).click();
  await page.getByRole('button', { name: 'Create New Key' }).click();
  await page.getByLabel('Name').fill('e2e key');
  await page.getByLabel('Permissions').selectOption('full');
  expect(await unlabelledControls(page)).toEqual([]);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
  await expect.poll(() => page.getByText('cannot be shown again').isVisible()).toBe(true);
  const key = await page.getByLabel('API key e2e key').inputValue();
  expect(key).toMatch(/^tg-live-[A-Za-z0-9]{32}$/);
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
  await screenshot(page, '05-keys-new-key-shown-once');

  // Shown once: gone after dismissing, and not in the page after a reload either; the list has only the hint.
  await page.getByRole('button', { name: 'I have stored the key' }).click();
  expect(await page.content()).not.toContain(key);
  await page.reload();
  const row = page.getByRole('row', { name: /e2e key/ });
  await row.waitFor();
  expect(await page.content()).not.toContain(key);
  expect(await row.textContent()).toContain(`${key.slice(0, 12)}...${key.slice(-4)}`);

  const client = new OpenAI({ apiKey: key, baseURL: gateway.baseURL, maxRetries: 0 });
  const completion = await client.chat.completions.create({
    model: 'sandbox/echo',
    messages: [{ role: 'user', content: 'Hello from the dashboard test' }],
  });
  expect(completion.choices[0]!.message.content).toBeTruthy();
  const cost = (completion.usage as unknown as { cost: number }).cost;
  expect(cost).toBeGreaterThan(0);

  await page.getByRole('link', { name: 'Credits & usage' }).click();
  await expect.poll(async () => usdText(await balance().textContent())).toBeCloseTo(5 - cost, 9);
  const today = page.locator('.stat', { hasText: 'Today' });
  await expect.poll(() => today.textContent()).toContain('1 request ·');
  expect(await today.textContent()).toContain(`${completion.usage!.total_tokens} tokens`);
  await page
    .getByRole('row', { name: /sandbox\/echo/ })
    .first()
    .waitFor();
  const debit = page.locator('#ledger tbody tr', { hasText: 'debit' });
  expect(await debit.count()).toBe(1);
  expect(await debit.textContent()).toContain('sandbox/echo');
  expect(await page.locator('#ledger tbody tr', { hasText: 'grant' }).count()).toBe(1);
  // Without a payment processor the user cannot turn auto-recharge on: the page shows it disabled and says why.
  const recharge = page.getByLabel('Recharge automatically');
  expect([await recharge.isDisabled(), await page.getByLabel('Add this amount (USD)').isDisabled()]).toEqual([
    true,
    true,
  ]);
  const credits = (await client.get('/credits')) as {
    billing: { auto_recharge: { enabled: boolean; unavailable_reason: string } };
  };
  expect(credits.billing.auto_recharge.enabled).toBe(false);
  expect(credits.billing.auto_recharge.unavailable_reason).toMatch(/payment/);
  expect(await page.locator('#recharge-help').textContent()).toBe(credits.billing.auto_recharge.unavailable_reason);
  expect(await recharge.getAttribute('aria-describedby')).toBe('recharge-help');
  await page.getByLabel('Low-balance alerts at (USD, comma-separated)').fill('2, 0.5');
  expect(await unlabelledControls(page)).toEqual([]);
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByText('Settings saved.').waitFor();
  expect(((await client.get('/credits')) as { billing: { auto_recharge: unknown } }).billing.auto_recharge).toEqual(
    credits.billing.auto_recharge,
  );
  await screenshot(page, '06-credits-after-request');

  // The ledger pages 20 entries at a time: 20 top-ups push the debit and the grant to page 2.
  const { account_id: accountId } = await page.evaluate<{ account_id: string }>(
    "fetch('/dashboard/api/session').then((r) => r.json())",
  );
  for (let i = 1; i <= 20; i++)
    await gateway.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: 0.01, note: `top-up ${i}` });
  await page.reload();
  const ledgerRows = page.locator('#ledger tbody tr');
  await expect.poll(() => ledgerRows.first().textContent()).toContain('top-up 20');
  expect(await ledgerRows.count()).toBe(20);
  await page.getByRole('button', { name: 'Older' }).click();
  await page.getByText('Page 2').waitFor();
  await expect.poll(() => ledgerRows.count()).toBe(2);
  expect((await ledgerRows.allTextContents()).map((t) => /debit|grant/.exec(t)?.[0])).toEqual(['debit', 'grant']);
  expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
  await page.getByRole('button', { name: 'Newer' }).click();
  await expect.poll(() => ledgerRows.first().textContent()).toContain('top-up 20');

  await page.getByRole('link', { name: 'Models' }).click();
  await page.getByRole('row', { name: /sandbox\/echo/ }).waitFor();
  // Every price kind the catalog has is shown, not only prompt and completion.
  expect(await page.getByRole('row', { name: /sandbox\/echo/ }).textContent()).toContain('cache read $0.000075');
  const allRows = await page.locator('#models tbody tr').count();
  await page.getByLabel('Capability').selectOption('embedding');
  await expect.poll(() => page.locator('#models tbody tr').count()).toBeLessThan(allRows);
  await page.getByLabel('Capability').selectOption('');
  await expect.poll(() => page.locator('#models tbody tr').count()).toBe(allRows);
  await page.getByLabel('Provider').selectOption('sandbox');
  await expect.poll(() => page.locator('#models tbody tr').count()).toBe(allRows);
  expect(await unlabelledControls(page)).toEqual([]);
  await screenshot(page, '07-models');

  // A test project key limited to one model with its own spend limit, made through the form.
  await page.getByRole('link', { name: 'API Keys' }).click();
  await page.getByRole('button', { name: 'Create New Key' }).click();
  await page.getByLabel('Name').fill('ci project');
  await page.getByLabel('Test (sandbox, free)').check();
  await page.getByLabel('Permissions').selectOption('project');
  await page.getByRole('checkbox', { name: 'sandbox/echo' }).check();
  await page.getByLabel('Spend limit (USD, optional)').fill('0.5');
  expect(await unlabelledControls(page)).toEqual([]);
  await screenshot(page, '08-keys-create-project-key');
  await page.getByRole('button', { name: 'Create key' }).click();
  const projectKey = await page.getByLabel('API key ci project').inputValue();
  expect(projectKey).toMatch(/^tg-test-[A-Za-z0-9]{32}$/);
  await page.getByRole('button', { name: 'I have stored the key' }).click();
  const projectRow = page.getByRole('row', { name: /ci project/ });
  expect(await projectRow.textContent()).toMatch(
    /test[\s\S]*Project[\s\S]*sandbox\/echo[\s\S]*\$0\.00 of \$0\.50 in total/,
  );
  const project = new OpenAI({ apiKey: projectKey, baseURL: gateway.baseURL, maxRetries: 0 });
  const other = await project.chat.completions
    .create({ model: 'sandbox/lorem', messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  expect(other).toBeInstanceOf(OpenAI.PermissionDeniedError);

  await page.getByRole('link', { name: 'API Keys' }).click();
  await expect.poll(() => page.getByRole('row', { name: /e2e key/ }).textContent()).not.toContain('Never');
  await page
    .getByRole('row', { name: /e2e key/ })
    .getByRole('button', { name: /Revoke/ })
    .click();
  const dialog = page.getByRole('dialog', { name: /Revoke key/ });
  await dialog.waitFor();
  await screenshot(page, '09-keys-revoke-confirm');
  await dialog.getByRole('button', { name: 'Revoke key' }).click();
  await expect.poll(() => page.getByRole('row', { name: /e2e key/ }).textContent()).toContain('Revoked');
  await screenshot(page, '10-keys-revoked');

  const refused = await client.chat.completions
    .create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'again' }] })
    .catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);

  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});

test('a page on another origin cannot create keys with the signed-in session', async () => {
  const before = await listKeys();
  const active = before.data.find((k) => !k.revoked)!;
  expect(active).toBeDefined();
  // Same host, other port: the same site, so SameSite=Lax alone would let the cookie through.
  const evil: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(`<form id="f" method="POST" action="${gateway.url}/dashboard/api/keys" enctype="text/plain">
      <input name='{"name":"evil","x":"' value='"}'></form>
      <script>fetch('${gateway.url}/dashboard/api/keys/${active.id}/revoke', {method:'POST', mode:'no-cors', credentials:'include'}).finally(() => document.getElementById('f').submit())</script>`);
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  const attacker = await context.newPage();
  try {
    const posted = attacker.waitForResponse(
      (r) => r.url().endsWith('/dashboard/api/keys') && r.request().method() === 'POST',
    );
    await attacker.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    const response = await posted;
    expect(response.status()).toBe(403);
    expect((await response.json()).error.code).toBe('permission_denied');
  } finally {
    await attacker.close();
    evil.close();
  }
  const after = await listKeys();
  expect(after.data).toEqual(before.data);
});

test(
  'webhooks: add an endpoint (secret shown once), a failed event becomes a dead letter, replay delivers it',
  { timeout: 30_000 },
  async () => {
    let answer = 500;
    const receiver: Server = createServer((request, response) => {
      request.resume();
      request.on('end', () => ((response.statusCode = answer), response.end()));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/tollgate-events`;
    try {
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      await page.getByText('No endpoints yet.').waitFor();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByRole('checkbox', { name: /llm\.completion$/ }).check();
      await page.getByLabel('Delivery attempts before a dead letter').fill('1');
      await page.getByLabel('Description (optional)').fill('e2e receiver');
      expect(await unlabelledControls(page)).toEqual([]);
      await screenshot(page, '11-webhooks-add-endpoint');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = await page.getByLabel('Signing secret').inputValue();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      await expect.poll(() => page.getByText('cannot be shown again').isVisible()).toBe(true);
      await page.getByRole('button', { name: 'I have stored the secret' }).click();
      expect(await page.content()).not.toContain(secret);
      const endpoint = page.locator('#endpoints tbody tr', { hasText: url });
      expect(await endpoint.textContent()).toContain('llm.completion');

      await endpoint.getByRole('button', { name: /Send test/ }).click();
      await page.getByText('failed: HTTP 500').waitFor();
      await page.locator('#deliveries tbody tr', { hasText: 'webhook.test' }).waitFor();

      // A completion through a key of this account: its llm.completion event fails its only attempt.
      const { account_id: accountId } = await page.evaluate<{ account_id: string }>(
        "fetch('/dashboard/api/session').then((r) => r.json())",
      );
      const { key } = await gateway.key(accountId, { name: 'webhook e2e' });
      await new OpenAI({ apiKey: key, baseURL: gateway.baseURL, maxRetries: 0 }).chat.completions.create({
        model: 'sandbox/echo',
        messages: [{ role: 'user', content: 'hook' }],
      });
      const deadRow = page.locator('#dead-letters tbody tr', { hasText: 'llm.completion' });
      await expect
        .poll(async () => (await page.getByRole('button', { name: 'Refresh' }).click(), deadRow.count()), {
          timeout: 10_000,
        })
        .toBe(1);
      expect(await deadRow.textContent()).toContain('HTTP 500');
      await screenshot(page, '12-webhooks-dead-letter');

      answer = 200;
      await deadRow.getByRole('button', { name: /Replay/ }).click();
      await page.getByText('queued again').waitFor();
      const delivered = page.locator('#deliveries tbody tr', { hasText: 'llm.completion' }).first();
      await expect
        .poll(async () => (await page.getByRole('button', { name: 'Refresh' }).click(), delivered.textContent()), {
          timeout: 10_000,
        })
        .toContain('succeeded');
      await page.getByText('No dead letters.').waitFor();
      await screenshot(page, '13-webhooks-replayed');
      expect(errors).toEqual([]);
      expect(foreign).toEqual([]);
    } finally {
      receiver.close();
    }
  },
);

test('usable at 375 px: no sideways scrolling, every page reachable, sign out and back in', async () => {
  const mobile = await browser.newContext({
    viewport: { width: 375, height: 812 },
    storageState: await context.storageState(),
  });
  mobile.setDefaultTimeout(10_000);
  const phone = await mobile.newPage();
  const phoneErrors = watchErrors(phone);
  try {
    const pages = [
      ['/dashboard/keys', 'API Keys'],
      ['/dashboard/credits', 'Credits & usage'],
      ['/dashboard/models', 'Models'],
      ['/dashboard/webhooks', 'Webhooks'],
    ] as const;
    for (const [path, name] of pages) {
      await phone.goto(`${gateway.url}${path}`);
      await phone.getByRole('heading', { name, level: 1 }).waitFor();
      await phone.locator('.loading').first().waitFor({ state: 'detached' });
      expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      await screenshot(phone, `14-mobile-${path.split('/').pop()}`);
    }
    await phone.getByRole('link', { name: 'API Keys' }).click();
    const create = phone.getByRole('button', { name: 'Create New Key' });
    expect(await create.isVisible()).toBe(true);
    const box = (await create.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(375);

    await phone.getByRole('button', { name: 'Sign out' }).click();
    await phone.getByRole('heading', { name: 'Sign in to tollgate' }).waitFor();
    await phone.getByLabel('Email').fill(email.toUpperCase());
    await phone.getByLabel('Password').fill(password);
    await phone.getByRole('button', { name: 'Sign in' }).click();
    await phone.getByRole('heading', { name: 'API Keys', level: 1 }).waitFor();
    await screenshot(phone, '15-mobile-signed-in-again');
    expect(phoneErrors).toEqual([]);
  } finally {
    await mobile.close();
  }
});
