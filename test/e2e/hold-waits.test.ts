/**
 * Near zero credit, a request refused only because of other requests' holds in flight waits for them (briefly,
 * bounded per account) instead of a 402: Claude Code's title request (`max_tokens` 64,000, lowered to a bound that
 * holds almost the whole balance) and its main turn a moment later are both served. Against the running gateway,
 * with holds in memory (SQLite) and shared in Redis (PostgreSQL).
 */
import { afterAll, beforeAll, beforeEach, expect, it, onTestFinished } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { describeEach } from '../support/backends.js';
import { CLAUDE_CODE_BETAS, claudeCodeBody } from '../support/claude-code.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const CLAUDE = 'claude-sonnet-5-5';
const WAIT_MS = 3_000;

const nano = (usd: number) => Math.round(usd * 1e9);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite, holds in memory', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL, holds shared in Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:waits:${process.pid}:${Date.now()}:` },
  },
];

describeEach(CONFIGURATIONS)('holds in flight on $name', ({ dialect, env }) => {
  let gateway: TestGateway;
  let upstream: MockAnthropic;

  beforeAll(async () => {
    upstream = await startMockAnthropic({ apiKey: 'sk-ant-waits' });
    gateway = await startGateway({
      dialect,
      env: { ...env, ANTHROPIC_API_KEY: 'sk-ant-waits', ANTHROPIC_BASE_URL: upstream.url },
      overrides: {
        routing: { ...defaultConfig().routing, backoff_ms: 5, retries: 0, breaker_failures: 1_000 },
        credits: { wait_for_holds_ms: WAIT_MS, waiters_per_account: 1 },
      },
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.setBehavior({ kind: 'ok' }));

  async function balance(accountId: string): Promise<number> {
    const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
    return nano(body.balance.credits);
  }

  /** Claude Code's request, as it sends it; resolves with the status, how long it took, and the USD it was charged. */
  async function claudeCode(key: string, signal?: AbortSignal) {
    const started = Date.now();
    const response = await fetch(`${gateway.baseURL}/messages?beta=true`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': CLAUDE_CODE_BETAS.join(','),
        'content-type': 'application/json',
      },
      body: JSON.stringify(claudeCodeBody(CLAUDE, 64_000)),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    const ms = Date.now() - started;
    if (response.status !== 200) return { status: response.status, ms, error: JSON.parse(text).error, cost: 0 };
    const delta = text
      .split('\n')
      .filter((line) => line.startsWith('data: {"type":"message_delta"'))
      .map((line) => JSON.parse(line.slice(6)))
      .at(-1);
    return { status: 200, ms, lowered: response.headers.get('x-tollgate-max-tokens-lowered'), cost: delta.usage.cost };
  }

  /** Waits until `count` requests reached the upstream. */
  async function upstreamReached(count: number): Promise<void> {
    for (let i = 0; i < 200 && upstream.requests.length < count; i++) await sleep(10);
    expect(upstream.requests.length).toBeGreaterThanOrEqual(count);
  }

  it("serves Claude Code's title request and its main turn a moment later at 0.07 USD, charging each exactly", async () => {
    const { id, key } = await gateway.account();
    await gateway.setBalance(id, 0.07);
    const before = await balance(id);
    // The title's answer is short, and takes a moment: the main turn arrives while its hold is in flight.
    upstream.enqueue({ kind: 'ok', text: 'Greeting from tollgate', latencyMs: 300 });
    const title = claudeCode(key);
    await sleep(50);
    const main = claudeCode(key);
    const [titled, answered] = await Promise.all([title, main]);
    expect(titled).toMatchObject({ status: 200 });
    // The title's 64,000 tokens were more than 0.07 USD pays: its bound was lowered, holding nearly all of it.
    expect(Number(titled.lowered)).toBeLessThan(64_000);
    expect(answered).toMatchObject({ status: 200 });
    expect(answered.ms).toBeLessThan(WAIT_MS);
    const after = await balance(id);
    expect(after).toBeGreaterThanOrEqual(0);
    expect(before - after).toBe(nano(titled.cost) + nano(answered.cost));
  });

  it("waits the same way at a project key's spend limit, where the holds of the key's other requests are in the way", async () => {
    const { id } = await gateway.account();
    await gateway.setBalance(id, 10);
    const created = await gateway.admin('POST', `/admin/accounts/${id}/keys`, {
      permissions: 'project',
      models: [CLAUDE],
      spend_limit: 0.07,
    });
    expect(created.status).toBe(201);
    const before = await balance(id);
    upstream.enqueue({ kind: 'ok', text: 'Greeting from tollgate', latencyMs: 300 });
    const title = claudeCode(created.body.key);
    await sleep(50);
    const [titled, answered] = await Promise.all([title, claudeCode(created.body.key)]);
    expect(titled).toMatchObject({ status: 200 });
    expect(Number(titled.lowered)).toBeLessThan(64_000);
    expect(answered).toMatchObject({ status: 200 });
    expect(before - (await balance(id))).toBe(nano(titled.cost) + nano(answered.cost));
    const { body: account } = await gateway.admin('GET', `/admin/accounts/${id}`);
    const spent = account.keys.find((key: { id: string }) => key.id === created.body.id).spent;
    expect(nano(spent)).toBe(nano(titled.cost) + nano(answered.cost));
    expect(nano(spent)).toBeLessThanOrEqual(nano(0.07));
  });

  it('refuses at once (402, no wait) a request the balance cannot pay even with no hold in flight', async () => {
    const { id, key } = await gateway.account();
    await gateway.setBalance(id, 0.000_5);
    const refused = await claudeCode(key);
    expect(refused).toMatchObject({ status: 402, error: { type: 'billing_error' } });
    expect(refused.ms).toBeLessThan(WAIT_MS / 2);
    expect(await balance(id)).toBe(nano(0.000_5));
  });

  it('waits at most wait_for_holds_ms, then 402; beyond waiters_per_account, 402 at once', async () => {
    const { id, key } = await gateway.account();
    await gateway.setBalance(id, 0.07);
    const requestsBefore = upstream.requests.length;
    upstream.enqueue({ kind: 'hang' });
    const stuck = new AbortController();
    const title = claudeCode(key, stuck.signal).catch(() => undefined);
    onTestFinished(() => stuck.abort());
    await upstreamReached(requestsBefore + 1);
    const waiting = claudeCode(key);
    // Time for it to reach the wallet and wait, on a loaded machine too.
    await sleep(1_000);
    // The account's one place is taken: the next is refused at once.
    const crowded = await claudeCode(key);
    expect(crowded).toMatchObject({ status: 402, error: { type: 'billing_error' } });
    expect(crowded.ms).toBeLessThan(WAIT_MS / 2);
    const waited = await waiting;
    expect(waited).toMatchObject({ status: 402, error: { type: 'billing_error' } });
    expect(waited.ms).toBeGreaterThanOrEqual(WAIT_MS - 100);
    expect(waited.ms).toBeLessThan(WAIT_MS + 2_000);
    stuck.abort();
    await title;
    expect(upstream.requests.length).toBe(requestsBefore + 1);
    expect(await balance(id)).toBe(nano(0.07));
  });

  it('frees the place of a waiting request whose client disconnects', async () => {
    const { id, key } = await gateway.account();
    await gateway.setBalance(id, 0.07);
    const requestsBefore = upstream.requests.length;
    upstream.enqueue({ kind: 'hang' });
    const stuck = new AbortController();
    const title = claudeCode(key, stuck.signal).catch(() => undefined);
    onTestFinished(() => stuck.abort());
    await upstreamReached(requestsBefore + 1);
    const leaving = new AbortController();
    const left = claudeCode(key, leaving.signal).catch((error: unknown) => error);
    await sleep(200);
    leaving.abort();
    expect(await left).toBeInstanceOf(Error);
    await sleep(100);
    // The place is free again: this one waits (it is not refused at once), and is served once the title goes.
    const next = claudeCode(key);
    await sleep(300);
    stuck.abort();
    await title;
    const served = await next;
    expect(served).toMatchObject({ status: 200 });
    expect(served.ms).toBeGreaterThanOrEqual(300);
    expect(await balance(id)).toBe(nano(0.07) - nano(served.cost));
  });
});
