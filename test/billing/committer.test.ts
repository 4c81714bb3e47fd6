import { afterEach, describe, expect, it } from 'vitest';
import { Committer } from '../../src/billing/committer.js';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { dialectReachable } from '../support/backends.js';

let database: TestDatabase;
let storage: Storage;

afterEach(async () => {
  await storage?.close();
  await database?.drop();
});

async function setup(dialect: 'sqlite' | 'postgres' = 'sqlite'): Promise<void> {
  database = await createTestDatabase(dialect);
  storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
  await storage.ledger.createAccount({
    id: 'acct_1',
    email: 'a@example.com',
    plan: 'free',
    settings: '{}',
    grantNano: 1_000n,
  });
}

const debit = (amountNano: bigint, requestId: string) => ({
  entry: { accountId: 'acct_1', kind: 'debit' as const, amountNano: -amountNano, requestId },
});

describe('group commit', () => {
  it('writes submissions of one event-loop turn in one transaction', async () => {
    await setup();
    const real = storage.ledger.commit.bind(storage.ledger);
    const sizes: number[] = [];
    storage.ledger.commit = async (batch) => (sizes.push(batch.entries.length), real(batch));
    const committer = new Committer({ storage });
    const outcomes = await Promise.all(
      [debit(100n, 'r1'), debit(200n, 'r2'), debit(300n, 'r3')].map((i) => committer.submit(i)),
    );
    expect(outcomes.map((o) => o.applied)).toEqual([-100n, -200n, -300n]);
    expect(sizes).toEqual([3]);
    expect(await storage.ledger.sum('acct_1')).toBe(400n);
  });

  it('lets callers stop waiting when the database fails, and still writes the charge once it answers', async () => {
    await setup();
    const real = storage.ledger.commit.bind(storage.ledger);
    let failing = true;
    storage.ledger.commit = async (batch) => {
      if (failing) throw new Error('database unavailable');
      return real(batch);
    };
    const errors: unknown[] = [];
    const committer = new Committer({ storage, waitTimeoutMs: 300, onError: (e) => errors.push(e) });
    const started = Date.now();
    await expect(committer.submit(debit(250n, 'r1'))).rejects.toThrow(/did not confirm/);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(errors.length).toBeGreaterThan(0);

    failing = false;
    await committer.drain(5_000);
    expect(await storage.ledger.debitedFor('r1')).toBe(250n);
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(750n);
    committer.close();
  });

  for (const dialect of DIALECTS) {
    it.skipIf(!dialectReachable(dialect))(
      `retries a batch whose commit succeeded but reported an error, and debits each request once (${dialect})`,
      async () => {
        await setup(dialect);
        const real = storage.ledger.commit.bind(storage.ledger);
        const seen: Array<boolean | undefined> = [];
        let lostAcknowledgements = 1;
        // The database commits, then the answer is lost on the way back (a dropped connection after COMMIT).
        storage.ledger.commit = async (batch) => {
          seen.push(batch.retried);
          const result = await real(batch);
          if (lostAcknowledgements-- > 0) throw new Error('connection lost after COMMIT');
          return result;
        };
        const committer = new Committer({ storage });
        const outcomes = await Promise.all([committer.submit(debit(300n, 'r1')), committer.submit(debit(200n, 'r2'))]);
        expect(
          outcomes.map((o) => o.applied),
          dialect,
        ).toEqual([-300n, -200n]);
        expect(seen, dialect).toEqual([false, true]);
        expect(await storage.ledger.debitedFor('r1')).toBe(300n);
        expect((await storage.accounts.get('acct_1'))?.balanceNano, dialect).toBe(500n);
        expect(await storage.ledger.sum('acct_1'), dialect).toBe(500n);
        committer.close();
        await storage.close();
        await database.drop();
      },
    );
  }
});
