/**
 * Every charge explained, as a user reaches it in headless Chromium: "Download CSV" on the Credits page saves the
 * account's charges, which add up to its debits in the ledger; a ledger row's "Details" and an id from a CSV row
 * open the request, whose breakdown charges what the ledger took. Screenshots go to test-results/dashboard/.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { LedgerRecord } from '../../src/storage/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { buildBundle, launch, screenshot, unlabelledControls, watchErrors } from './browser.js';
import { parseCsv } from './csv.js';

let gateway: TestGateway;
let browser: Browser;
let page: Page;
let errors: string[];
let accountId: string;
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  await buildBundle();
  [gateway, browser] = await Promise.all([startGateway(), launch()]);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  context.setDefaultTimeout(10_000);
  page = await context.newPage();
  errors = watchErrors(page);

  await page.goto(`${gateway.url}/dashboard/signup`);
  const password = 'a long enough passphrase';
  await page.getByLabel('Email').fill(`charges-e2e-${Date.now()}@example.com`);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Confirm password').fill(password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('button', { name: 'I have stored the key' }).click();
  ({ account_id: accountId } = await page.evaluate<{ account_id: string }>(
    "fetch('/dashboard/api/session').then((r) => r.json())",
  ));

  const client = gateway.client((await gateway.key(accountId, { name: 'csv key' })).key);
  await client.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'first' }] });
  const stream = await client.chat.completions.create({
    model: 'sandbox/echo',
    messages: [{ role: 'user', content: 'second, streamed' }],
    stream: true,
  });
  for await (const _chunk of stream);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
});

const debitsOf = async (id: string): Promise<LedgerRecord[]> =>
  (await gateway.app.storage.ledger.list(id, { limit: 100 })).filter((e) => e.kind === 'debit');

/** Clicks the link and reads the file the browser saved. */
async function downloaded(name: string): Promise<{ file: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name }).click()]);
  return { file: download.suggestedFilename(), text: await readFile(await download.path(), 'utf8') };
}

test('Download CSV: this month by default, one row per request adding up to the ledger debits', async () => {
  await page.getByRole('link', { name: 'Credits & usage' }).click();
  await page.getByRole('heading', { name: 'Download usage' }).waitFor();
  expect(await page.getByLabel('From').inputValue()).toBe(`${today.slice(0, 7)}-01`);
  expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe(today);
  expect(await page.getByLabel('Group by').inputValue()).toBe('');
  expect(await unlabelledControls(page)).toEqual([]);
  await screenshot(page, '30-credits-download-usage');

  const debits = await debitsOf(accountId);
  expect(debits).toHaveLength(2);
  const csv = await downloaded('Download CSV');
  expect(csv.file).toBe(`usage-${today.slice(0, 7)}-01-${today}.csv`);
  const rows = parseCsv(csv.text);
  expect(rows).toHaveLength(2);
  expect(rows.reduce((sum, r) => sum + BigInt(r.cost_nano!), 0n)).toBe(debits.reduce((s, d) => s - d.amountNano, 0n));
  for (const row of rows) {
    const debit = debits.find((d) => d.requestId === row.request_id);
    expect(debit?.id).toBe(row.ledger_entry_id);
    expect(row.key_name).toBe('csv key');
  }

  await page.getByLabel('From').fill(today);
  await page.getByLabel('Group by').selectOption('model');
  const grouped = await downloaded('Download CSV');
  expect(grouped.file).toBe(`usage-${today}-${today}-model.csv`);
  expect(parseCsv(grouped.text)).toEqual([expect.objectContaining({ model: 'sandbox/echo', requests: '2' })]);

  // A range that ends before it starts is refused in the page: the links go nowhere.
  await page.getByLabel('To', { exact: true }).fill('2020-01-01');
  await page.getByRole('alert').getByText("'From' must not be after 'To'.").waitFor();
  expect(await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href')).toBeNull();
  expect(errors).toEqual([]);
});

test("a ledger row's Details: the model, the endpoint, and a breakdown charging what the ledger took", async () => {
  await page.reload();
  const row = page.locator('#ledger tbody tr', { hasText: 'debit' }).first();
  const ledgerEntry = (await debitsOf(accountId))[0]!;
  expect(await row.textContent()).toContain(ledgerEntry.requestId);
  await row.getByRole('link', { name: /^Details/ }).click();
  await page.getByRole('heading', { name: 'Request', level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toBe(`/dashboard/requests/${ledgerEntry.id}`);
  const summary = page.locator('#request-summary');
  await summary.waitFor();
  const facts = await summary.textContent();
  for (const fact of ['sandbox/echo', 'sandbox', '/v1/chat/completions', 'csv key', 'UTC'])
    expect(facts).toContain(fact);
  const ids = await page.locator('.ids').textContent();
  for (const id of [ledgerEntry.requestId!, ledgerEntry.answerId!, ledgerEntry.id]) expect(ids).toContain(id);
  const lines = (await page.locator('#breakdown tbody tr').allTextContents()).map((l) => l.trim());
  expect(lines.map((l) => /^(Input|Output)/.exec(l)?.[0])).toEqual(['Input', 'Output']);
  expect(lines[0]).toMatch(/per 1M tokens/);
  const charged = await page.getByTestId('charged').textContent();
  expect(usdToNano(charged!)).toBe(-ledgerEntry.amountNano);
  expect(await page.getByRole('link', { name: 'Credits & usage', exact: true }).getAttribute('aria-current')).toBe(
    'page',
  );
  await screenshot(page, '31-request-detail');
  expect(errors).toEqual([]);

  await page.getByRole('link', { name: 'Back to Credits & usage' }).click();
  await page.getByRole('heading', { name: 'Credits & usage', level: 1 }).waitFor();
});

test("an answer id from a CSV row finds the request; another account's request is not found", async () => {
  const streamed = (await debitsOf(accountId)).find((d) => d.detail?.includes('"streamed":true'))!;
  await page.goto(`${gateway.url}/dashboard/credits`);
  await page.getByLabel('Request, answer or ledger entry id').fill(streamed.answerId!);
  await page.getByRole('button', { name: 'Show request' }).click();
  await page.locator('.ids', { hasText: streamed.id }).waitFor();
  expect(await page.locator('#request-summary').textContent()).toMatch(/Streamed\s+Yes/);

  const stranger = await gateway.account();
  await gateway
    .client(stranger.key)
    .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'not yours' }] });
  const theirs = (await debitsOf(stranger.id))[0]!;
  const status = await page.evaluate<number>(
    `fetch('/dashboard/api/generation?id=${theirs.requestId}').then((r) => r.status)`,
  );
  expect(status).toBe(404);
  await page.goto(`${gateway.url}/dashboard/requests/${theirs.id}`);
  await page.getByRole('alert').getByText(`No request '${theirs.id}' was charged to this account`).waitFor();
  expect(await page.locator('#request-summary').count()).toBe(0);
});

test("the keys page tells the key's requests and credits today and this month", async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${gateway.url}/dashboard/keys`);
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'csv key' }) });
  await row
    .getByRole('cell', { name: /^2 requests/ })
    .first()
    .waitFor();
  expect(await row.getByRole('cell', { name: /^2 requests/ }).count()).toBe(2);
  const spent = (await debitsOf(accountId)).reduce((sum, d) => sum - d.amountNano, 0n);
  const todayCell = await row
    .getByRole('cell', { name: /^2 requests/ })
    .first()
    .innerText();
  expect(usdToNano(/\$[\d.,]+/.exec(todayCell)![0])).toBe(spent);
  await screenshot(page, '33-keys-usage');
});

test('the request page at 375 px: no sideways scrolling', async () => {
  const [entry] = await debitsOf(accountId);
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(`${gateway.url}/dashboard/requests/${entry!.id}`);
  await page.getByTestId('charged').waitFor();
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
  await screenshot(page, '32-mobile-request-detail');
});

/** `$0.000012345` as nano-USD. */
function usdToNano(text: string): bigint {
  const [whole, fraction = ''] = text.replace(/[$,]/g, '').split('.');
  return BigInt(whole!) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0'));
}
