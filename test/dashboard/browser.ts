/** Headless Chromium (Debian's package) through playwright-core, and the screenshots folder. */
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildDashboard } from '../../web/build.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = join('test-results', 'dashboard');
const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Bundles the dashboard when dist/web is older than its sources, so the browser never runs a stale build. A fresh
 * bundle is left alone: gateways of other test files, running at the same time, read it.
 */
export async function buildBundle(): Promise<void> {
  const built = join(ROOT, 'dist', 'web', 'index.html');
  if (existsSync(built) && statSync(built).mtimeMs >= newestSource()) return;
  await buildDashboard();
}

/** The newest modification time of what the bundle is made from. */
function newestSource(): number {
  const files = ['web/index.html', 'web/styles.css', 'web/build.mjs'].map((file) => join(ROOT, file));
  const sources = join(ROOT, 'web', 'src');
  for (const entry of readdirSync(sources, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) files.push(join(entry.parentPath, entry.name));
  return Math.max(...files.map((file) => statSync(file).mtimeMs));
}

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start. No background traffic of Chromium's
  // own, so the only requests are the page's.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}

/** Collects what the page reports as an error: console errors (failed loads included) and uncaught exceptions. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  return errors;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Every request the page makes to another origin than the gateway's (the dashboard must need no network). */
export function watchForeignRequests(page: Page, origin: string): string[] {
  const foreign: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (
      (url.protocol === 'http:' || url.protocol === 'https:' || url.protocol === 'ws:' || url.protocol === 'wss:') &&
      url.origin !== origin
    )
      foreign.push(request.url());
  });
  return foreign;
}

/** Visible form controls without an accessible name (label, aria-label or aria-labelledby): should be none. */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(`[...document.querySelectorAll('input, select, textarea')]
    .filter((el) => el.type !== 'hidden' && el.getClientRects().length > 0)
    .filter((el) => !(el.labels && [...el.labels].some((l) => l.textContent.trim())) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML.slice(0, 120))`);
}
