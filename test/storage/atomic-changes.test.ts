/**
 * `Storage.atomically`: a change and its audit entry are written together or not at all, and on SQLite's one
 * connection a charge committed meanwhile is never folded into (and rolled back with) the change's transaction.
 */
import { expect, it } from 'vitest';
import type { Storage } from '../../src/storage/index.js';
import { LEDGER_CONFIGURATIONS, storageWithAccount } from '../support/databases.js';
import { describeEach } from '../support/backends.js';

const NANO = 1_000_000_000n;

describeEach(LEDGER_CONFIGURATIONS)('atomic changes on %s (ledger journal: %s)', (dialect, ledgerJournal) => {
  const open = storageWithAccount(dialect, ledgerJournal, 5n * NANO);
  let storage: Storage;

  async function setup(): Promise<void> {
    storage = await open();
    await storage.keys.insert({
      id: 'key_1',
      accountId: 'acct_1',
      name: 'before',
      keyHash: 'h1',
      hint: 'tg-live-xxxx...yyyy',
      environment: 'live',
      permissions: 'full',
      models: [],
      spendLimitNano: null,
      createdAt: Date.now(),
    });
  }

  const renamed = (changes: Parameters<Parameters<Storage['atomically']>[0]>[0], name: string) =>
    Promise.all([
      changes.keys.update('key_1', { name }),
      changes.audit.record({
        accountId: 'acct_1',
        actor: { type: 'operator', id: null, ip: '127.0.0.1' },
        action: 'key.update',
        target: { type: 'key', id: 'key_1' },
        before: { name: 'before' },
        after: { name },
      }),
    ]);

  it('writes the change and its audit entry together, and neither when the work throws', async () => {
    await setup();
    await expect(
      storage.atomically(async (changes) => {
        await renamed(changes, 'lost');
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await storage.keys.get('key_1'))!.name).toBe('before');
    expect(await storage.audit.list('acct_1', { limit: 10 })).toEqual([]);

    await storage.atomically((changes) => renamed(changes, 'after'));
    expect((await storage.keys.get('key_1'))!.name).toBe('after');
    const [entry] = await storage.audit.list('acct_1', { limit: 10 });
    expect(entry).toMatchObject({
      action: 'key.update',
      before: { name: 'before' },
      after: { name: 'after' },
      ip: '127.0.0.1',
    });
  });

  it('keeps a charge committed while a change waits on other work, even when the change is rolled back', async () => {
    await setup();
    // Another request's charge, started from outside the change (its own async context) while the change is open.
    let chargeNow = () => {};
    const charged = new Promise<void>((resolve) => (chargeNow = resolve)).then(() =>
      storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -NANO, note: 'a charge' }] }),
    );
    await expect(
      storage.atomically(async (changes) => {
        await renamed(changes, 'lost');
        // Real I/O inside the change: other tasks run meanwhile, and one of them commits a charge.
        chargeNow();
        await new Promise((resolve) => setTimeout(resolve, 20));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await charged;
    expect(await storage.ledger.sum('acct_1')).toBe(4n * NANO);
    expect((await storage.accounts.get('acct_1'))!.balanceNano).toBe(4n * NANO);
    expect((await storage.keys.get('key_1'))!.name).toBe('before');
  });

  it.runIf(dialect === 'sqlite')(
    'refuses a money write made inside a change instead of waiting for it forever',
    async () => {
      await setup();
      await expect(
        storage.atomically(() =>
          storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'topup', amountNano: NANO }] }),
        ),
      ).rejects.toThrow(/cannot run inside/);
      expect(await storage.ledger.sum('acct_1')).toBe(5n * NANO);
    },
  );
});
