/**
 * Sign-up where SMTP is configured, in headless Chromium: "check your email", the link from the real mail opens
 * the confirm page, one click signs in with the first key and 5 USD.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMailbox, type Mailbox } from '../support/smtp.js';
import { buildBundle, launch, screenshot, watchErrors } from './browser.js';

let gateway: TestGateway;
let mailbox: Mailbox;
let browser: Browser;

beforeAll(async () => {
  await buildBundle();
  mailbox = await startMailbox();
  [gateway, browser] = await Promise.all([startGateway({ env: { SMTP_URL: mailbox.url } }), launch()]);
});
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await mailbox?.close();
});

test(
  'sign up, check your email, follow the link, confirm: signed in with the first key and 5 USD',
  { timeout: 60_000 },
  async () => {
    const email = `verify-e2e-${Date.now()}@example.com`;
    const password = 'a long enough passphrase';
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(10_000);
    const errors = watchErrors(page);
    await page.goto(`${gateway.url}/dashboard/signup`);
    await page.getByText('New accounts start with 5 USD of free credit once the email is confirmed.').waitFor();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByLabel('Confirm password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await screenshot(page, '20-check-your-email');

    const link = /http:\/\/\S+\/dashboard\/verify#[A-Za-z0-9_-]{43}/.exec((await mailbox.next(email)).text)![0];
    expect(link.startsWith(gateway.url)).toBe(true);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Confirm your email' }).waitFor();
    await screenshot(page, '21-confirm-email');
    await page.getByRole('button', { name: 'Confirm my email' }).click();
    await page.getByRole('heading', { name: 'Your first API key' }).waitFor();
    expect(new URL(page.url()).hash).toBe('');
    await page.getByRole('button', { name: 'I have stored the key' }).click();
    await page.getByRole('link', { name: 'Credits & usage' }).click();
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$5.00');
    expect(errors).toEqual([]);
  },
);
