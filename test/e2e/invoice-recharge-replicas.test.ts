/**
 * An invoice-billed auto-recharge is written once per dip below the threshold, however many replicas see the dip:
 * two gateways on one PostgreSQL database and one Redis, debited at the same moment, round after round.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { apiCall } from '../support/admin-call.js';
import { needsPostgresAndRedis } from '../support/backends.js';
import { tempDir } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const ROUNDS = 8;

needsPostgresAndRedis('invoice auto-recharge on two gateways (PostgreSQL and Redis)', () => {
  let gw: TestGateway;
  let second: App;
  let secondUrl: string;
  let database: pg.Client;

  beforeAll(async () => {
    const env = { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tg-invoice-${Date.now()}:` };
    gw = await startGateway({ dialect: 'postgres', env });
    const config = loadConfig({
      env: {
        ...env,
        TOLLGATE_DATA_DIR: tempDir(),
        DATABASE_URL: gw.database.databaseUrl!,
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
        TOLLGATE_LOG_LEVEL: 'silent',
        PORT: '0',
        HOST: '127.0.0.1',
      },
      file: undefined,
    });
    second = await createApp(config);
    secondUrl = await second.listen();
    database = new pg.Client({ connectionString: gw.database.databaseUrl! });
    await database.connect();
  });
  afterAll(async () => {
    await database?.end();
    await second?.close();
    await gw?.close();
  });

  const spend = async (base: string, key: string) =>
    (
      await apiCall(base, key, 'POST', '/v1/chat/completions', {
        model: 'sandbox/lorem',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'spend' }],
      })
    ).status;

  const recharges = async (accountId: string) =>
    ((await gw.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`)).body.data as any[]).filter(
      (e) => e.kind === 'recharge',
    );

  it('a dip seen by both gateways at once is recharged once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const account = await gw.account();
      await gw.setBalance(account.id, 5);
      // Any debit takes the balance below 5; one recharge of 10 lifts it well above.
      const set = await gw.admin('PATCH', `/admin/accounts/${account.id}`, {
        billing: { processor: 'invoice', monthly_ceiling: 1000 },
        auto_recharge: { enabled: true, threshold: 5, amount: 10 },
      });
      expect(set.status).toBe(200);
      const answers = await Promise.all([gw.url, secondUrl, gw.url, secondUrl].map((base) => spend(base, account.key)));
      expect(answers).toEqual([200, 200, 200, 200]);
      await expect.poll(async () => (await recharges(account.id)).length, { timeout: 5000 }).toBeGreaterThan(0);
      // Room for a second recharge to land, if either gateway were to write one.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(
        (await recharges(account.id)).map((e) => e.amount),
        `round ${round}`,
      ).toEqual([10]);
      const lines = await database.query<{ amount_nano: string }>(
        'SELECT amount_nano FROM invoices WHERE account_id = $1',
        [account.id],
      );
      expect(lines.rows.map((line) => line.amount_nano)).toEqual(['10000000000']);
    }
  });
});
