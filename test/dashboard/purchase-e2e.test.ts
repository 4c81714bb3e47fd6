/**
 * "Add credits" in headless Chromium: sign in, buy 20 USD, the browser goes to Stripe's checkout URL (the local
 * mock's, answered here in place of Stripe's page), comes back to the return page, which shows the purchase pending
 * until the signed webhook arrives, then paid with the new balance; the purchases list links Stripe's receipt.
 * Card auto-recharges are listed beside the purchases, with Stripe's reference and why one failed.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { buildBundle, launch, screenshot, unlabelledControls, watchErrors } from './browser.js';
import { DashboardClient, uniqueEmail } from './client.js';

let stripe: MockStripe;
let gateway: TestGateway;
let browser: Browser;

beforeAll(async () => {
  await buildBundle();
  stripe = await startMockStripe();
  [gateway, browser] = await Promise.all([startGateway({ env: stripe.env }), launch()]);
});
afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await stripe?.close();
});

test(
  'add 20 USD: checkout, back to the purchase pending, then paid with the new balance and the receipt',
  { timeout: 60_000 },
  async () => {
    const email = uniqueEmail('buy-e2e');
    const password = 'a long enough passphrase';
    await new DashboardClient(gateway.url).signUp(email, password);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const errors = watchErrors(page);
    // Stripe's hosted checkout page, which the browser cannot reach here: stand in for it.
    const checkoutVisits: string[] = [];
    await context.route('https://checkout.stripe.test/**', (route) => {
      checkoutVisits.push(route.request().url());
      return route.fulfill({
        contentType: 'text/html',
        body: '<!doctype html><title>Stripe Checkout</title><h1>Pay with card</h1>',
      });
    });

    await page.goto(`${gateway.url}/dashboard/signin`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Credits & usage' }).click();
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$5.00');
    await page.getByRole('heading', { name: 'Add credits' }).waitFor();
    await page.getByText('From $5.00 to $1,000.00 per purchase.').waitFor();
    await expect.poll(() => page.locator('#purchases-section').textContent()).toContain('No purchases yet.');
    expect(await unlabelledControls(page)).toEqual([]);
    await screenshot(page, '30-add-credits');

    await page.getByLabel('Amount to add (USD)').fill('20');
    await page.getByRole('button', { name: 'Add credits' }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.test\//);
    const session = [...stripe.sessions.values()].find((s) => s.amount_total === 2000)!;
    expect(page.url()).toBe(session.url);
    expect(checkoutVisits).toEqual([session.url]);
    const purchaseId = session.client_reference_id as string;

    // The buyer pays; Stripe sends them back to the success URL and, separately, the signed event.
    expect(session.success_url).toBe(`${gateway.url}/dashboard/credits?purchase=${purchaseId}`);
    await page.goto(session.success_url);
    const notice = page.getByTestId('purchase-status');
    await expect.poll(() => notice.getAttribute('data-status')).toBe('pending');
    expect(await notice.textContent()).toContain(
      'Your purchase of $20.00 is pending: waiting for Stripe to confirm the payment',
    );
    await screenshot(page, '31-purchase-pending');

    expect(
      (await stripe.deliver(gateway.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
    ).toBe(200);
    await expect.poll(() => notice.getAttribute('data-status'), { timeout: 10_000 }).toBe('paid');
    expect(await notice.textContent()).toContain('Your purchase of $20.00 is paid: $20.00 was added to your balance.');
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('$25.00');

    const row = page.locator('#purchases tbody tr');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toMatch(/\$20\.00\s*paid/);
    const receipt = row.getByRole('link', { name: 'Receipt' });
    expect(await receipt.getAttribute('href')).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\/rcpt_/);
    await expect.poll(() => page.locator('#ledger tbody').textContent()).toContain(`(purchase ${purchaseId})`);
    await screenshot(page, '32-purchase-paid');
    expect(errors).toEqual([]);
    await context.close();
  },
);

test(
  'card auto-recharges are listed with their status, Stripe reference and failure reason',
  { timeout: 60_000 },
  async () => {
    const email = uniqueEmail('recharge-e2e');
    const password = 'a long enough passphrase';
    const dashboard = new DashboardClient(gateway.url);
    const key = (await dashboard.signUp(email, password)).body.first_key.key as string;
    const call = async (path: string, body: unknown) => {
      const response = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    // The card is saved by a purchase; then every debit is below the threshold.
    const purchase = (await call('/v1/credits/purchases', { amount: 20 })).body;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    expect(
      (await stripe.deliver(gateway.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
    ).toBe(200);
    expect(
      (await dashboard.request('PATCH', '/settings', { auto_recharge: { enabled: true, threshold: 1000, amount: 10 } }))
        .status,
    ).toBe(200);
    const spend = async () =>
      expect(
        (
          await call('/v1/chat/completions', {
            model: 'sandbox/lorem',
            max_tokens: 5,
            messages: [{ role: 'user', content: 'spend' }],
          })
        ).status,
      ).toBe(200);
    const settled = async (n: number) =>
      expect
        .poll(
          async () =>
            ((await dashboard.request('GET', '/recharges')).body.data as any[]).filter((r) => r.status !== 'pending')
              .length,
          { timeout: 10_000 },
        )
        .toBe(n);

    stripe.intentOutcome = 'succeeded';
    await spend();
    await settled(1);
    stripe.intentOutcome = 'card_declined';
    await spend();
    await settled(2);
    stripe.intentOutcome = 'succeeded';
    const [declined, succeeded] = (await dashboard.request('GET', '/recharges')).body.data;

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${gateway.url}/dashboard/signin`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Credits & usage' }).click();
    await page.getByRole('heading', { name: 'Automatic recharges' }).waitFor();
    const rows = page.locator('#recharges tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    const newest = (await rows.nth(0).textContent())!;
    expect(newest).toMatch(/\$10\.00\s*failed/);
    expect(newest).toContain('Not credited (card_declined): the card was declined (generic_decline)');
    const credited = rows.nth(1);
    expect(await credited.textContent()).toMatch(/\$10\.00\s*succeeded/);
    expect(await credited.textContent()).toContain('Credited ');
    expect(await credited.locator('code').textContent()).toBe(succeeded.payment_intent_id);
    expect(succeeded.payment_intent_id).toMatch(/^pi_/);
    expect(declined.status).toBe('failed');
    await expect
      .poll(() => page.locator('#ledger tbody').textContent())
      .toContain(`auto-recharge via stripe ${succeeded.payment_intent_id}`);
    await screenshot(page, '33-card-recharges');
    expect(errors).toEqual([]);
    await context.close();
  },
);
