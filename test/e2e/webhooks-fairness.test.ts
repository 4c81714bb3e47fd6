/**
 * Fair delivery, on SQLite and PostgreSQL: while one account's receivers accept connections and never answer,
 * its deliveries hold at most `max_in_flight_per_endpoint` / `max_in_flight_per_account` attempts (counted at the
 * receiver, across two gateways on one PostgreSQL database), and another account's llm.completion still arrives
 * within 1 s. The `tollgate_webhook_*` metrics show the queue, the attempts in flight and the delivery latency.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { DIALECTS, tempDir } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { sleep, startReceiver, TEST_WEBHOOKS, type Receiver } from '../webhooks/receiver-server.js';
import { describeEach, needsPostgres } from '../support/backends.js';

const SECRET = 'fairness-secret-0123456789-0123456789-01';
const PER_ENDPOINT = 4;
const PER_ACCOUNT = 8;

/** A receiver that reads each request and never answers; it counts the requests open at once, per path. */
interface HangingReceiver {
  url: string;
  open: Map<string, number>;
  maxOpen: Map<string, number>;
  maxTotal: number;
  total(): number;
  close(): Promise<void>;
}

async function startHangingReceiver(): Promise<HangingReceiver> {
  const state = { open: new Map<string, number>(), maxOpen: new Map<string, number>(), maxTotal: 0 };
  const total = () => [...state.open.values()].reduce((a, b) => a + b, 0);
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    request.resume();
    state.open.set(path, (state.open.get(path) ?? 0) + 1);
    state.maxOpen.set(path, Math.max(state.maxOpen.get(path) ?? 0, state.open.get(path)!));
    state.maxTotal = Math.max(state.maxTotal, total());
    response.on('close', () => state.open.set(path, state.open.get(path)! - 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    total,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  // Receivers first: the gateways' attempts in flight then end at once instead of at their 30 s timeout.
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function register(baseURL: string, key: string, url: string, timeout = 30_000): Promise<string> {
  const response = await fetch(`${baseURL}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ secret: SECRET, url, events: [{ type: 'llm.completion' }], timeout }),
  });
  const body = (await response.json()) as { id: string };
  if (response.status !== 201) throw new Error(JSON.stringify(body));
  return body.id;
}

async function chat(baseURL: string, key: string, content = 'fair'): Promise<void> {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', max_tokens: 8, messages: [{ role: 'user', content }] }),
  });
  if (response.status !== 200) throw new Error(`chat answered ${response.status}: ${await response.text()}`);
  await response.arrayBuffer();
}

/** `count` chat requests, 8 at a time, spread over the given base URLs. */
async function chats(baseURLs: string[], key: string, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const i = next++;
        await chat(baseURLs[i % baseURLs.length]!, key, `hang ${i}`);
      }
    }),
  );
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** B's event, from the end of B's chat request to its arrival at B's receiver, in ms. */
async function latencyOfAnotherTenant(baseURL: string, key: string, receiver: Receiver): Promise<number> {
  await chat(baseURL, key, 'not stalled');
  const answered = Date.now();
  const [delivery] = await receiver.waitFor(1, undefined, 5_000);
  return delivery!.at - answered;
}

async function metrics(url: string): Promise<string> {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return response.text();
}

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describeEach(DIALECTS)('fair delivery on %s', (dialect) => {
  it("delivers another tenant's event within 1 s while 66 deliveries hang at one tenant's receivers", async () => {
    const gateway: TestGateway = await startGateway({ dialect, overrides: { webhooks: TEST_WEBHOOKS } });
    cleanups.push(() => gateway.close());
    const hanging = await startHangingReceiver();
    const fast = await startReceiver();
    cleanups.push(
      () => fast.close(),
      () => hanging.close(),
    );

    const a = await gateway.account();
    const b = await gateway.account();
    // Three endpoints of A: the account's cap (8) binds before the three endpoints' (3 × 4).
    const endpoints = [];
    for (const path of ['/a1', '/a2', '/a3'])
      endpoints.push(await register(gateway.baseURL, a.key, `${hanging.url}${path}`));
    await register(gateway.baseURL, b.key, fast.url);

    await chats([gateway.baseURL], a.key, 22);
    await until(() => hanging.total() >= PER_ACCOUNT, 5_000, `${PER_ACCOUNT} hanging attempts`);
    await sleep(300); // room for the worker to (wrongly) take more

    const latency = await latencyOfAnotherTenant(gateway.baseURL, b.key, fast);
    expect(latency).toBeLessThan(1_000);
    expect(hanging.maxTotal).toBe(PER_ACCOUNT);
    for (const path of ['/a1', '/a2', '/a3']) expect(hanging.maxOpen.get(path)).toBeLessThanOrEqual(PER_ENDPOINT);

    // B's outcome is recorded just after B's receiver answered.
    let text = await metrics(gateway.url);
    for (let i = 0; i < 100 && sample(text, 'tollgate_webhook_delivery_seconds_count') !== 1; i++) {
      await sleep(20);
      text = await metrics(gateway.url);
    }
    const inFlight = endpoints.map((id) => sample(text, `tollgate_webhook_in_flight{endpoint="${id}"}`) ?? 0);
    expect(inFlight.reduce((x, y) => x + y, 0)).toBe(PER_ACCOUNT);
    expect(Math.max(...inFlight)).toBeLessThanOrEqual(PER_ENDPOINT);
    expect(sample(text, 'tollgate_webhook_queue_depth')).toBe(66 - PER_ACCOUNT);
    expect(sample(text, 'tollgate_webhook_delivery_seconds_count')).toBe(1);
    expect(sample(text, 'tollgate_webhook_delivery_seconds_sum')).toBeLessThan(1);
  });
});

needsPostgres('fair delivery across two gateways on one PostgreSQL database', () => {
  it('holds the per-endpoint cap across both, and another tenant still gets its event within 1 s', async () => {
    const gateway = await startGateway({ dialect: 'postgres', overrides: { webhooks: TEST_WEBHOOKS } });
    cleanups.push(() => gateway.close());
    const config = loadConfig({
      env: {
        TOLLGATE_DATA_DIR: tempDir(),
        DATABASE_URL: gateway.database.databaseUrl!,
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
        TOLLGATE_LOG_LEVEL: 'silent',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      file: undefined,
      overrides: { webhooks: TEST_WEBHOOKS },
    });
    const second = await createApp(config);
    cleanups.push(() => second.close());
    const secondBase = `${await second.listen()}/v1`;
    const hanging = await startHangingReceiver();
    const fast = await startReceiver();
    cleanups.push(
      () => fast.close(),
      () => hanging.close(),
    );

    const a = await gateway.account();
    const b = await gateway.account();
    const endpoint = await register(gateway.baseURL, a.key, `${hanging.url}/a`);
    await register(gateway.baseURL, b.key, fast.url);
    await sleep(TEST_WEBHOOKS.refresh_ms * 2); // the second gateway loads the registrations

    await chats([gateway.baseURL, secondBase], a.key, 64);
    await until(() => hanging.total() >= PER_ENDPOINT, 5_000, `${PER_ENDPOINT} hanging attempts`);
    await sleep(300);

    const latency = await latencyOfAnotherTenant(secondBase, b.key, fast);
    expect(latency).toBeLessThan(1_000);
    expect(hanging.maxOpen.get('/a')).toBe(PER_ENDPOINT);
    const inFlight = await Promise.all(
      [gateway.url, secondBase.replace(/\/v1$/, '')].map(
        async (url) => sample(await metrics(url), `tollgate_webhook_in_flight{endpoint="${endpoint}"}`) ?? 0,
      ),
    );
    expect(inFlight[0]! + inFlight[1]!).toBe(PER_ENDPOINT);
  });
});
