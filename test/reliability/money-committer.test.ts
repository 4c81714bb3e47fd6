/**
 * A batch the database has committed is never written again: not when the acknowledgement is lost (both
 * dialects look for the request's debit first), and not when the after-commit callback throws.
 */
import { afterEach, expect, it } from 'vitest';
import { Committer } from '../../src/billing/committer.js';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { describeEach } from '../support/backends.js';

describeEach(DIALECTS)('committer on %s', (dialect) => {
  let database: TestDatabase;
  let storage: Storage;
  afterEach(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function account(): Promise<string> {
    database = await createTestDatabase(dialect);
    storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 1_000n,
    });
    return 'acct_1';
  }

  it('reports an error of the after-commit callback without writing the batch twice', async () => {
    const accountId = await account();
    const errors: unknown[] = [];
    const committer = new Committer({
      storage,
      onCommitted: () => {
        throw new Error('a listener failed');
      },
      onError: (error) => errors.push(error),
    });
    const outcome = await committer.submit({
      entry: { accountId, kind: 'debit', amountNano: -300n, requestId: 'req_1' },
    });
    await committer.drain();
    committer.close();
    expect(outcome.applied).toBe(-300n);
    expect(errors).toHaveLength(1);
    expect(await storage.ledger.debitedFor('req_1')).toBe(300n);
    expect((await storage.accounts.get(accountId))!.balanceNano).toBe(700n);
  });

  it('does not debit a request again when its batch is retried after a commit that succeeded', async () => {
    const accountId = await account();
    const batch = { entries: [{ accountId, kind: 'debit' as const, amountNano: -300n, requestId: 'req_2' }] };
    await storage.ledger.commit(batch);
    // The committer marks a batch that failed before; only then does the writer look for debits already written.
    const again = await storage.ledger.commit({ ...batch, retried: true });
    expect(again.applied).toEqual([-300n]);
    expect(await storage.ledger.debitedFor('req_2')).toBe(300n);
    expect((await storage.accounts.get(accountId))!.balanceNano).toBe(700n);
    expect(await storage.ledger.sum(accountId)).toBe(700n);
  });
});
