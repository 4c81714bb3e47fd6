/**
 * PostgreSQL briefly down: /ready and requests answer 503 service_unavailable quickly (no hang, no 500), and
 * the gateway recovers by itself when the database is back, with the ledger intact. The database is cut
 * through a TCP proxy, so the PostgreSQL other tests use keeps running.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PG_ADMIN_URL } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startTcpProxy, type Outage, type TcpProxy } from '../support/tcp-proxy.js';
import { needsPostgres } from '../support/backends.js';

const toNano = (usd: number) => Math.round(usd * 1e9);

needsPostgres('PostgreSQL outage', () => {
  let proxy: TcpProxy;
  let gateway: TestGateway;

  beforeAll(async () => {
    const target = new URL(PG_ADMIN_URL);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    gateway = await startGateway({ dialect: 'postgres', databaseUrl: (url) => proxy.rewrite(url) });
  });
  afterAll(async () => {
    proxy?.up();
    await gateway?.close();
    await proxy?.close();
  });

  const chat = async (key: string) => {
    const started = Date.now();
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'still there?' }] }),
    });
    return { status: response.status, body: (await response.json()) as any, ms: Date.now() - started };
  };

  const ready = async () => {
    const started = Date.now();
    const response = await fetch(`${gateway.url}/ready`);
    return { status: response.status, body: (await response.json()) as any, ms: Date.now() - started };
  };

  async function expectLedgerMatchesBalance(accountId: string) {
    const { body: account } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
    const { body: ledger } = await gateway.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
    const sum = (ledger.data as Array<{ amount: number }>).reduce((total, entry) => total + toNano(entry.amount), 0);
    expect(sum).toBe(toNano(account.balance.credits));
  }

  it.each<Outage>(['refuse', 'blackhole', 'freeze'])(
    'answers 503 while the database is down (%s) and recovers by itself',
    async (outage) => {
      const used = await gateway.account();
      expect((await chat(used.key)).status).toBe(200);
      // Never used before the outage, so its lookup has to reach the database.
      const fresh = await gateway.account();

      proxy.down(outage);
      const notReady = await ready();
      expect(notReady.status).toBe(503);
      expect(notReady.body.error.code).toBe('service_unavailable');
      expect(notReady.ms).toBeLessThan(4_000);

      const refused = await chat(fresh.key);
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'service_unavailable', type: 'service_unavailable' });
      expect(refused.ms).toBeLessThan(6_000);

      proxy.up();
      const deadline = Date.now() + 10_000;
      while ((await ready()).status !== 200) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect((await chat(fresh.key)).status).toBe(200);
      expect((await chat(used.key)).status).toBe(200);
      await expectLedgerMatchesBalance(used.id);
      await expectLedgerMatchesBalance(fresh.id);
    },
  );
});
