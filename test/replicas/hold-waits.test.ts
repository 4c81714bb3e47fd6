/**
 * A request refused only because of a hold in flight on another replica waits for it: that replica's hold ends out
 * of this one's sight, in Redis, and the waiter looks again every 100 ms. Claude Code's title request on replica A,
 * its main turn a moment later on replica B, at 0.07 USD: both served, charged exactly.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { needsPostgresAndRedis } from '../support/backends.js';
import { CLAUDE_CODE_BETAS, claudeCodeBody } from '../support/claude-code.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startReplicas, type Replicas } from '../support/replicas.js';

const nano = (usd: number) => Math.round(usd * 1e9);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

needsPostgresAndRedis('holds in flight across two replicas (PostgreSQL + Redis)', { timeout: 60_000 }, () => {
  let replicas: Replicas | undefined;
  let upstream: MockAnthropic;

  beforeAll(async () => {
    upstream = await startMockAnthropic({ apiKey: 'sk-ant-replicas' });
    replicas = await startReplicas(2, {
      env: { ANTHROPIC_API_KEY: 'sk-ant-replicas', ANTHROPIC_BASE_URL: upstream.url },
    });
  });
  afterAll(async () => {
    await replicas?.stop();
    await upstream?.close();
  });

  async function balance(accountId: string): Promise<number> {
    const { body } = await replicas!.admin('GET', `/admin/accounts/${accountId}`);
    return nano(body.balance.credits);
  }

  async function claudeCode(replica: number, key: string) {
    const response = await fetch(`${replicas!.urls[replica]}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': CLAUDE_CODE_BETAS.join(','),
        'content-type': 'application/json',
      },
      body: JSON.stringify(claudeCodeBody('claude-sonnet-5-5', 64_000)),
    });
    const text = await response.text();
    if (response.status !== 200) return { status: response.status, cost: 0, text };
    const delta = text
      .split('\n')
      .filter((line) => line.startsWith('data: {"type":"message_delta"'))
      .map((line) => JSON.parse(line.slice(6)))
      .at(-1);
    return {
      status: 200,
      cost: delta.usage.cost as number,
      lowered: response.headers.get('x-tollgate-max-tokens-lowered'),
    };
  }

  it("serves Claude Code's title request on one replica and its main turn on another", async () => {
    const created = await replicas!.admin('POST', '/admin/accounts', { email: `waits-${Date.now()}@example.com` });
    expect(created.status).toBe(201);
    const { id, api_key: key } = created.body;
    const topped = await replicas!.admin('POST', `/admin/accounts/${id}/credits`, {
      amount: 0.07 - created.body.balance.credits,
    });
    expect(topped.status).toBe(200);
    const before = await balance(id);
    expect(before).toBe(nano(0.07));
    upstream.enqueue({ kind: 'ok', text: 'Greeting from tollgate', latencyMs: 400 });
    const title = claudeCode(0, key);
    await sleep(100);
    const [titled, answered] = await Promise.all([title, claudeCode(1, key)]);
    expect(titled).toMatchObject({ status: 200 });
    expect(Number(titled.lowered)).toBeLessThan(64_000);
    expect(answered).toMatchObject({ status: 200 });
    const after = await balance(id);
    expect(after).toBeGreaterThanOrEqual(0);
    expect(before - after).toBe(nano(titled.cost) + nano(answered.cost));
  });
});
