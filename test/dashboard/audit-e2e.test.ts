/**
 * The Audit log page in a browser: an owner invites someone on the Members page, opens the Audit log from the nav
 * and sees the invitation with its actor; the entry opens to its after JSON.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { buildBundle, launch, screenshot, watchErrors } from './browser.js';

let gateway: TestGateway;
let browser: Browser;

beforeAll(async () => {
  await buildBundle();
  [gateway, browser] = await Promise.all([startGateway(), launch()]);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

test('the Audit log lists a change newest first and opens it to before and after', { timeout: 90_000 }, async () => {
  const stamp = Date.now();
  const ownerEmail = `audit-owner-${stamp}@example.com`;
  const guestEmail = `audit-guest-${stamp}@example.com`;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${gateway.url}/dashboard/signup`);
  await page.getByLabel('Email').fill(ownerEmail);
  await page.getByLabel('Password', { exact: true }).fill('a long enough passphrase');
  await page.getByLabel('Confirm password').fill('a long enough passphrase');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('button', { name: 'I have stored the key' }).click();

  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByLabel('Email').fill(guestEmail);
  await page.getByLabel('Role', { exact: true }).selectOption('billing');
  await page.getByRole('button', { name: 'Invite' }).click();
  await page.getByLabel('Invitation link').waitFor();

  await page.getByRole('link', { name: 'Audit log' }).click();
  const entry = page.locator('#audit li').first();
  await entry.waitFor();
  expect(await entry.locator('summary').textContent()).toContain('member.invite');
  expect(await entry.locator('summary').textContent()).toContain(`by ${ownerEmail}`);
  await entry.locator('summary').click();
  expect(await entry.locator('pre').nth(1).textContent()).toContain(guestEmail);
  await screenshot(page, 'audit-log');
  expect(errors).toEqual([]);
  await context.close();
});
