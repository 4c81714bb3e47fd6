/**
 * Closing an account against a key made at the same moment: the key creation that started before the closing
 * committed waits for it and is refused, so a closed account never holds a live key. A second closing is refused.
 * On SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { closeAccount } from '../../src/admin/account-closing.js';
import { GatewayError } from '../../src/errors/index.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

const owner = { type: 'operator' as const, id: null };

describeEach(DIALECTS)('closing an account on %s', (dialect) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway({ dialect });
  });
  afterAll(() => gateway?.close());

  test('a key made while the account is being closed waits for the closing and is refused', async () => {
    const { app } = gateway;
    const { account } = await app.admin.createAccount({ email: `racing-${Date.now()}@example.com` });
    let closeNow!: () => void;
    const held = new Promise<void>((resolve) => (closeNow = resolve));
    let marked!: () => void;
    const closingMarked = new Promise<void>((resolve) => (marked = resolve));
    // The closing marks the account, then stays open until the key creation has started.
    const closing = app.storage.atomically(async (tx) => {
      await tx.accounts.close(account.id, Date.now());
      marked();
      await held;
    });
    await closingMarked;
    const creating = app.admin.createKey(account.id, { name: 'too late' }).then(
      () => 'created',
      (error: unknown) => (error instanceof GatewayError ? error.message : String(error)),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    closeNow();
    await closing;
    expect(await creating).toBe(`Account ${account.id} is closed: it can have no new keys`);
    const keys = await app.storage.keys.listByAccount(account.id);
    expect(keys.map((k) => k.name)).toEqual(['default']);
  });

  test('closing twice is refused the second time, with one audit entry', async () => {
    const { app } = gateway;
    const { account } = await app.admin.createAccount({ email: `twice-${Date.now()}@example.com` });
    await closeAccount(app.storage, account.id, owner);
    await expect(closeAccount(app.storage, account.id, owner)).rejects.toThrow(
      `Account ${account.id} is already closed`,
    );
    const entries = await app.storage.audit.list(account.id, { limit: 10, action: 'account.close' });
    expect(entries).toHaveLength(1);
    expect((await app.storage.keys.listByAccount(account.id)).every((k) => k.revokedAt !== null)).toBe(true);
  });
});
