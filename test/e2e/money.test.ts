/**
 * Money under concurrency: 100 requests at once (chat, streamed chat and embeddings) at an account that can pay
 * only some of them.
 * The balance never goes below zero, equals the ledger sum, and the costs the clients saw equal the debits.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { describeEach } from '../support/backends.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const NANO = 1e9;
const toNano = (usd: number) => Math.round(usd * NANO);

interface Outcome {
  status: number;
  costNano: number;
  code?: string;
  embeddings?: boolean;
}

async function chat(gateway: TestGateway, key: string, stream: boolean, i: number): Promise<Outcome> {
  const response = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sandbox/lorem',
      max_tokens: 40,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      messages: [{ role: 'user', content: `request number ${i}` }],
    }),
  });
  if (!stream || response.status !== 200) {
    const body = (await response.json()) as any;
    return { status: response.status, costNano: body.usage ? toNano(body.usage.cost) : 0, code: body.error?.code };
  }
  const text = await response.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]');
  const last = JSON.parse(events[events.length - 1]!.slice(6));
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  return { status: 200, costNano: toNano(last.usage.cost) };
}

/** About 1,000 input tokens of sandbox/embed: 20 microdollars, near what one chat request holds. */
async function embed(gateway: TestGateway, key: string, i: number): Promise<Outcome> {
  const response = await fetch(`${gateway.baseURL}/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/embed', input: [`request ${i}`, 'word '.repeat(1_000)] }),
  });
  const body = (await response.json()) as any;
  const costNano = body.usage ? toNano(body.usage.cost) : 0;
  return { status: response.status, costNano, code: body.error?.code, embeddings: true };
}

const CONFIGURATIONS = [
  ...DIALECTS.map((dialect) => ({ name: dialect, dialect, env: {} })),
  {
    name: 'postgres + redis (holds shared in Redis)',
    dialect: 'postgres' as const,
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:${process.pid}:${Date.now()}:` },
  },
];

describeEach(CONFIGURATIONS)('100 concurrent requests on $name', ({ dialect, env }) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway({ dialect, env });
  });
  afterAll(async () => gateway?.close());

  it('never spends more than the balance and charges exactly what the clients were told', async () => {
    const account = await gateway.account({ plan: 'pay_as_you_go' });
    // One request holds at most ~25 microdollars (prompt + 40 tokens of sandbox/lorem): 0.0004 USD pays for ~16, or ~20 embeddings.
    const startNano = toNano(0.0004);
    await gateway.setBalance(account.id, startNano / NANO);

    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        i % 3 === 2 ? embed(gateway, account.key, i) : chat(gateway, account.key, i % 3 === 0, i),
      ),
    );

    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    expect(ok.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(5);
    expect(ok.filter((o) => o.embeddings).length).toBeGreaterThan(0);
    for (const r of refused) expect([r.status, r.code]).toEqual([402, 'insufficient_credits']);

    const { body: account2 } = await gateway.admin('GET', `/admin/accounts/${account.id}`);
    const balanceNano = toNano(account2.balance.credits);
    expect(balanceNano).toBeGreaterThanOrEqual(0);

    const ledger = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=500`);
    const entries = ledger.body.data as Array<{ kind: string; amount: number }>;
    const ledgerSum = entries.reduce((sum, e) => sum + toNano(e.amount), 0);
    expect(ledgerSum).toBe(balanceNano);

    const debits = -entries.filter((e) => e.kind === 'debit').reduce((sum, e) => sum + toNano(e.amount), 0);
    const told = ok.reduce((sum, o) => sum + o.costNano, 0);
    expect(told).toBe(debits);
    expect(startNano - balanceNano).toBe(debits);
    expect(entries.filter((e) => e.kind === 'debit')).toHaveLength(ok.length);
  });
});
