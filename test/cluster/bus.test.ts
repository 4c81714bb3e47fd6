/** Change notifications between replicas: the buses themselves, then two apps on one PostgreSQL and one Redis. */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { LocalChangeBus, RedisChangeBus, type Change } from '../../src/cluster/index.js';
import { loadConfig } from '../../src/config/index.js';
import { tempDir } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { hasRedis, needsPostgresAndRedis } from '../support/backends.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const newPrefix = () => `tgtest:${randomBytes(6).toString('hex')}:`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

function redisBus(prefix: string, onError?: (error: unknown) => void): RedisChangeBus {
  const bus = new RedisChangeBus({ url: REDIS_TEST_URL, prefix, ...(onError ? { onError } : {}) });
  cleanup.push(() => bus.close());
  return bus;
}

/** Resolves once `condition` holds, checking every `everyMs`; rejects after `withinMs`. */
async function waitFor(condition: () => boolean | Promise<boolean>, withinMs: number, everyMs = 10): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > withinMs) throw new Error(`condition not met within ${withinMs} ms`);
    await sleep(everyMs);
  }
  return Date.now() - started;
}

describe('change buses', () => {
  it('the local bus runs its handlers before publish resolves', async () => {
    const bus = new LocalChangeBus();
    const heard: Change[] = [];
    bus.subscribe((change) => void heard.push(change));
    bus.subscribe(async (change) => {
      await Promise.resolve();
      heard.push(change);
    });
    await bus.publish({ accountId: 'acct_1', keyId: 'key_1' });
    expect(heard).toEqual([
      { accountId: 'acct_1', keyId: 'key_1' },
      { accountId: 'acct_1', keyId: 'key_1' },
    ]);
  });

  it.skipIf(!hasRedis)(
    'a change published on one Redis bus reaches the others within a second, and the publisher once',
    async () => {
      const prefix = newPrefix();
      const [a, b] = [redisBus(prefix), redisBus(prefix)];
      const other = redisBus(newPrefix());
      const heard = { a: [] as Change[], b: [] as Change[], other: [] as Change[] };
      const record = (into: Change[]) => (change: Change) => void (change.keyId !== 'warm-up' && into.push(change));
      a.subscribe(record(heard.a));
      b.subscribe(record(heard.b));
      other.subscribe(record(heard.other));
      // Subscribing is asynchronous: publish until b hears, then measure one clean delivery.
      let warm = false;
      b.subscribe((change) => void (warm ||= change.keyId === 'warm-up'));
      await waitFor(async () => (await a.publish({ keyId: 'warm-up' }), warm), 5_000, 50);

      await a.publish({ accountId: 'acct_1', keyId: 'key_1' });
      expect(heard.a).toEqual([{ accountId: 'acct_1', keyId: 'key_1' }]);
      expect(await waitFor(() => heard.b.length > 0, 1_000)).toBeLessThan(1_000);
      expect(heard.b).toEqual([{ accountId: 'acct_1', keyId: 'key_1' }]);
      await sleep(100);
      expect(heard.a).toHaveLength(1);
      expect(heard.other).toEqual([]);
    },
  );

  it.skipIf(!hasRedis)('does not throw when Redis is unreachable, and reports the failure', async () => {
    const errors: unknown[] = [];
    const bus = redisBus(newPrefix(), (error) => errors.push(error));
    const heard: Change[] = [];
    bus.subscribe((change) => void heard.push(change));
    const unreachable = new RedisChangeBus({ url: 'redis://127.0.0.1:1', onError: (error) => errors.push(error) });
    cleanup.push(() => unreachable.close());
    unreachable.subscribe((change) => void heard.push(change));
    const started = Date.now();
    await expect(unreachable.publish({ accountId: 'acct_1' })).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(errors.length).toBeGreaterThan(0);
    // This process's handlers still ran.
    expect(heard).toEqual([{ accountId: 'acct_1' }]);
  });
});

needsPostgresAndRedis('two replicas on one PostgreSQL database and one Redis', () => {
  let a: TestGateway;
  let b: App;
  let bUrl: string;

  async function start() {
    const redisPrefix = newPrefix();
    const env = { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: redisPrefix };
    a = await startGateway({ dialect: 'postgres', env });
    cleanup.push(() => a.close());
    b = await createApp(
      loadConfig({
        env: {
          TOLLGATE_DATA_DIR: tempDir(),
          DATABASE_URL: a.database.databaseUrl!,
          TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
          TOLLGATE_LOG_LEVEL: 'silent',
          PORT: '0',
          HOST: '127.0.0.1',
          ...env,
        },
        file: undefined,
      }),
    );
    cleanup.push(() => b.close());
    bUrl = await b.listen();
  }

  const chatOnB = (key: string) =>
    fetch(`${bUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('a key revoked through A is refused by B well within the 1 s cache lifetime', async () => {
    await start();
    const account = await a.account();
    const key = await a.key(account.id);
    // Warm-up: B has the key cached and its subscription is live (a change made through A reaches B).
    expect((await chatOnB(key.key)).status).toBe(200);
    const spare = await a.key(account.id);
    await a.admin('DELETE', `/admin/keys/${spare.id}`);
    await waitFor(async () => (await chatOnB(spare.key)).status === 401, 2_000, 50);

    expect((await chatOnB(key.key)).status).toBe(200);
    const revoke = await a.admin('DELETE', `/admin/keys/${key.id}`);
    expect(revoke.status).toBe(200);
    // B looked the key up moments ago, so without the bus it would accept it for up to another second.
    const refusedAfter = await waitFor(async () => (await chatOnB(key.key)).status === 401, 1_000, 20);
    expect(refusedAfter).toBeLessThan(300);
  });

  it('a plan change through A applies on B at once', async () => {
    await start();
    const account = await a.account({ plan: 'free' });
    const limit = async () => (await chatOnB(account.key)).headers.get('x-ratelimit-limit-requests');
    expect(await limit()).toBe('60');
    expect((await a.admin('PATCH', `/admin/accounts/${account.id}`, { plan: 'pay_as_you_go' })).status).toBe(200);
    expect(await waitFor(async () => (await limit()) === '600', 1_000, 20)).toBeLessThan(300);
  });
});
