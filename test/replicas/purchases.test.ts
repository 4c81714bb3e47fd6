/**
 * Two gateway processes on one PostgreSQL database receive the same Stripe events (Stripe retries, and a load
 * balancer spreads them): the purchase is credited once. Both also check pending purchases at Stripe every second:
 * a paid purchase nobody told them about is credited once too.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { startReplicas, type Replicas } from '../support/replicas.js';
import { needsPostgresAndRedis } from '../support/backends.js';

needsPostgresAndRedis('credit purchases on two replicas (PostgreSQL + Redis)', () => {
  let stripe: MockStripe;
  let replicas: Replicas;

  beforeAll(async () => {
    stripe = await startMockStripe();
    const config = join(mkdtempSync(join(tmpdir(), 'tollgate-checks-')), 'tollgate.config.yaml');
    writeFileSync(
      config,
      'payments:\n  purchase:\n    pending_check_after_seconds: 1\n    pending_check_interval_seconds: 1\n',
    );
    replicas = await startReplicas(2, { env: { ...stripe.env, TOLLGATE_CONFIG: config } });
  }, 90_000);
  afterAll(async () => {
    await replicas?.stop();
    await stripe?.close();
  });

  it('credits a purchase once when both replicas receive every delivery at the same time', async () => {
    onTestFailed(() => console.log(replicas.outputs()));
    const created = await replicas.admin('POST', '/admin/accounts', { email: `buyer-${Date.now()}@example.com` });
    const { id: accountId, api_key: key } = created.body;
    const bought = await fetch(`${replicas.urls[0]}/v1/credits/purchases`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 20 }),
    });
    expect(bought.status).toBe(201);
    const purchase = (await bought.json()) as any;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    const paid = stripe.pay(session.id);
    const events = [
      stripe.event('checkout.session.completed', paid),
      stripe.event('checkout.session.async_payment_succeeded', paid),
    ];
    const deliveries = replicas.urls.flatMap((url) =>
      events.flatMap((event) => [1, 2, 3].map(() => stripe.deliver(url, event))),
    );
    expect(new Set((await Promise.all(deliveries)).map((d) => d.status))).toEqual(new Set([200]));

    for (const url of replicas.urls) {
      const credits = (await (
        await fetch(`${url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })
      ).json()) as any;
      expect(credits.balance.credits).toBe(25);
    }
    const ledger = (await replicas.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[];
    expect(ledger.filter((e) => e.kind === 'topup').map((e) => e.amount)).toEqual([20]);
  });

  it('credits once a paid purchase whose webhook never comes, checked by both replicas and read on both', async () => {
    onTestFailed(() => console.log(replicas.outputs()));
    const created = await replicas.admin('POST', '/admin/accounts', { email: `sweep-${Date.now()}@example.com` });
    const { id: accountId, api_key: key } = created.body;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const bought = await fetch(`${replicas.urls[1]}/v1/credits/purchases`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ amount: 30 }),
    });
    const purchase = (await bought.json()) as any;
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.id)!;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    stripe.pay(session.id);
    // The buyer's return page polls both replicas while their checks run.
    const reads = replicas.urls.flatMap((url) =>
      [1, 2, 3].map(() => fetch(`${url}/v1/credits/purchases/${purchase.id}`, { headers }).then((r) => r.json())),
    );
    await Promise.all(reads);
    await expect
      .poll(
        async () =>
          ((await (await fetch(`${replicas.urls[0]}/v1/credits`, { headers })).json()) as any).balance.credits,
        { timeout: 15_000, interval: 250 },
      )
      .toBe(35);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const ledger = (await replicas.admin('GET', `/admin/accounts/${accountId}/ledger`)).body.data as any[];
    expect(ledger.filter((e) => e.kind === 'topup').map((e) => e.amount)).toEqual([30]);
    expect(stripe.calls.filter((c) => c.path === `/v1/checkout/sessions/${session.id}`).length).toBeGreaterThan(1);
  });
});
