/**
 * Members in headless Chromium: an owner invites by email on the Members page (no SMTP: the link is shown), the
 * invited person, already signed in to an account of its own in another browser, accepts it, then switches
 * between its two accounts; the nav shows the Members entry only where the role may manage members. The owner then
 * closes its account on the same page (its email typed), and the guest is left with its own account.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { buildBundle, launch, screenshot, unlabelledControls, watchErrors } from './browser.js';

let gateway: TestGateway;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await buildBundle();
  [gateway, browser] = await Promise.all([startGateway(), launch()]);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

async function signedUp(email: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(10_000);
  contexts.push(context);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${gateway.url}/dashboard/signup`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill('a long enough passphrase');
  await page.getByLabel('Confirm password').fill('a long enough passphrase');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('button', { name: 'I have stored the key' }).click();
  return { page, errors };
}

test('invite on the Members page, accept in another browser, switch accounts', { timeout: 90_000 }, async () => {
  const stamp = Date.now();
  const ownerEmail = `members-owner-${stamp}@example.com`;
  const guestEmail = `members-guest-${stamp}@example.com`;
  const owner = await signedUp(ownerEmail);
  const guest = await signedUp(guestEmail);

  await owner.page.getByRole('link', { name: 'Members' }).click();
  await owner.page.getByRole('heading', { name: 'People in this account' }).waitFor();
  await owner.page.getByLabel('Email').fill(guestEmail);
  await owner.page.getByLabel('Role', { exact: true }).selectOption('member');
  expect(await unlabelledControls(owner.page)).toEqual([]);
  await owner.page.getByRole('button', { name: 'Invite' }).click();
  const link = await owner.page.getByLabel('Invitation link').inputValue();
  expect(link).toMatch(/\/dashboard\/invite#[A-Za-z0-9_-]{43}$/);
  expect(await owner.page.locator('#invitations').textContent()).toContain(guestEmail);
  await screenshot(owner.page, 'members-invited');

  await guest.page.goto(link);
  await guest.page.getByText(`You accept as ${guestEmail}.`).waitFor();
  await guest.page.getByRole('button', { name: 'Accept the invitation' }).click();
  const switcher = guest.page.getByLabel('Account', { exact: true });
  await switcher.waitFor();
  // In the team it is a member: no Members entry; the switcher names the team's account.
  expect(await guest.page.locator('.user .email').textContent()).toBe(ownerEmail);
  expect(await guest.page.getByRole('navigation', { name: 'Main' }).textContent()).not.toContain('Members');
  await screenshot(guest.page, 'members-switcher');
  // A member may leave, but only an owner is offered closing the account.
  await guest.page.goto(`${gateway.url}/dashboard/members`);
  await guest.page.getByRole('button', { name: 'Leave this account' }).waitFor();
  expect(await guest.page.getByRole('heading', { name: 'Close this account' }).count()).toBe(0);

  const own = await switcher.locator('option', { hasText: guestEmail }).getAttribute('value');
  expect(own).toMatch(/^acct_/);
  await switcher.selectOption(own);
  await guest.page.locator('.user .email', { hasText: guestEmail }).waitFor();
  await guest.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).waitFor();

  await owner.page.reload();
  await owner.page.getByRole('cell', { name: guestEmail }).waitFor();

  // The owner closes its account: a mistyped email is refused on the page; the right one ends the session.
  const confirm = owner.page.getByLabel(`Type ${ownerEmail} to confirm`);
  await confirm.fill('someone-else@example.com');
  await owner.page.getByRole('button', { name: 'Close this account' }).click();
  await owner.page
    .getByRole('alert')
    .filter({ hasText: `Type the account's email, ${ownerEmail}` })
    .waitFor();
  await confirm.fill(ownerEmail);
  await owner.page.getByRole('button', { name: 'Close this account' }).click();
  await owner.page.getByRole('button', { name: 'Sign in' }).waitFor();
  // The guest belongs to its own account only now: no account switcher.
  await guest.page.reload();
  await guest.page.locator('.user .email', { hasText: guestEmail }).waitFor();
  expect(await guest.page.getByLabel('Account', { exact: true }).count()).toBe(0);
  expect(owner.errors.filter((e) => !/40[0-9]/.test(e))).toEqual([]);
  expect(guest.errors.filter((e) => !/40[0-9]/.test(e))).toEqual([]);
});
