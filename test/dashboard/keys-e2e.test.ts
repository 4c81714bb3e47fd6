/**
 * The keys page's governance in headless Chromium against a real gateway: create a key with a daily limit, an
 * expiry, rate limits and allowed IPs, see them listed; change them in the edit dialog; the key refuses a request
 * from an address outside its list. Screenshots go to test-results/dashboard/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { buildBundle, launch, screenshot, unlabelledControls, watchErrors } from './browser.js';

let gateway: TestGateway;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  await buildBundle();
  [gateway, browser] = await Promise.all([startGateway(), launch()]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  errors = watchErrors(page);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

test('create a key with a daily limit and allowed IPs, see them listed, change them', { timeout: 60_000 }, async () => {
  await page.goto(`${gateway.url}/dashboard/signup`);
  await page.getByLabel('Email').fill(`keys-e2e-${Date.now()}@example.com`);
  await page.getByLabel('Password', { exact: true }).fill('a long enough passphrase');
  await page.getByLabel('Confirm password').fill('a long enough passphrase');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('button', { name: 'I have stored the key' }).click();

  await page.getByRole('button', { name: 'Create New Key' }).click();
  await page.getByLabel('Name').fill('limited key');
  await page.getByLabel('Permissions').selectOption('project');
  await page.getByLabel('Spend limit (USD, optional)').fill('2.5');
  await page.getByLabel('Limit resets').selectOption('daily');
  await page.getByLabel('Expires (UTC, optional)').fill('2099-06-30T12:00');
  await page.getByLabel('Requests per minute').fill('30');
  await page.getByLabel('Allowed IP addresses').fill('10.1.2.3/16\n2001:db8::1');
  expect(await unlabelledControls(page)).toEqual([]);
  await screenshot(page, 'keys-governance-form');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
  const key = await page.getByLabel('API key limited key').inputValue();
  await page.getByRole('button', { name: 'I have stored the key' }).click();

  const row = page.getByRole('row', { name: /limited key/ });
  await row.waitFor();
  const listed = (await row.textContent()) ?? '';
  expect(listed).toContain('$0.00 of $2.50 daily');
  expect(listed).toMatch(/\$2\.50 left · resets \w{3} \d+, \d{4}/);
  expect(listed).toContain('Expires Jun 30, 2099');
  expect(listed).toContain('30 requests/min');
  expect(listed).toContain('IPs: 10.1.0.0/16, 2001:db8::1/128');
  expect(listed).toMatch(/by keys-e2e-\d+@example.com/);
  await screenshot(page, 'keys-governance-listed');

  // The test's client (127.0.0.1) is outside the key's addresses.
  const refused = await fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
  expect(refused.status).toBe(403);

  await row.getByRole('button', { name: 'Edit' }).click();
  const dialog = page.getByRole('dialog', { name: /Edit key/ });
  expect(await dialog.getByLabel('Spend limit (USD, optional)').inputValue()).toBe('2.5');
  expect(await dialog.getByLabel('Allowed IP addresses').inputValue()).toBe('10.1.0.0/16\n2001:db8::1/128');
  await dialog.getByLabel('Spend limit (USD, optional)').fill('4');
  await dialog.getByLabel('Limit resets').selectOption('weekly');
  await dialog.getByLabel('Allowed IP addresses').fill('127.0.0.0/8');
  await dialog.getByLabel('Requests per minute').fill('');
  await screenshot(page, 'keys-governance-edit');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect.poll(async () => (await row.textContent()) ?? '').toContain('$0.00 of $4.00 weekly');
  const changed = (await row.textContent()) ?? '';
  expect(changed).toContain('IPs: 127.0.0.0/8');
  expect(changed).not.toContain('requests/min');
  const allowed = await fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
  expect(allowed.status).toBe(200);

  // A bad value is explained in the dialog, and nothing changes.
  await row.getByRole('button', { name: 'Edit' }).click();
  await dialog.getByLabel('Allowed IP addresses').fill('10.0.0.0/99');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect.poll(() => dialog.getByRole('alert').textContent()).toContain('allowed_ips');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  expect(await row.textContent()).toContain('IPs: 127.0.0.0/8');
  expect(errors.filter((e) => !e.includes('400'))).toEqual([]);
});
