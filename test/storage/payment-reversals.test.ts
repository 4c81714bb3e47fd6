/**
 * A payment's refunds and disputes together never take back more than the payment credited: in any order, with
 * several dispute objects, and when two writers (two replicas, or the gateway and the CLI) apply them at once.
 */
import { afterEach, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/index.js';
import type { PaymentReversed } from '../../src/storage/batch.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { describeEach } from '../support/backends.js';

const usd = (n: number) => BigInt(Math.round(n * 1000)) * 1_000_000n;
const PAYMENT = usd(20);

// SQLite twice: as the CLI opens it, and as the gateway does, with charges confirmed through the ledger journal.
const CONFIGURATIONS = [
  ['sqlite', false],
  ['sqlite', true],
  ['postgres', false],
] as const satisfies ReadonlyArray<readonly ['sqlite' | 'postgres', boolean]>;

describeEach(CONFIGURATIONS)('payment reversals on %s (ledger journal: %s)', (dialect, ledgerJournal) => {
  let database: TestDatabase;
  const opened: Storage[] = [];

  afterEach(async () => {
    for (const storage of opened.splice(0)) await storage.close();
    await database?.drop();
  });

  /** The gateway's storage; `second` opens another writer on the same database, as a second replica or the CLI does. */
  async function open(second = false): Promise<Storage> {
    const storage = await openStorage({
      dataDir: database.dataDir,
      databaseUrl: database.databaseUrl,
      ledgerJournal: ledgerJournal && !second,
    });
    opened.push(storage);
    return storage;
  }

  /** An account credited by one payment of 20 USD. */
  async function paidAccount(storage: Storage, id: string): Promise<void> {
    await storage.ledger.createAccount({ id, email: `${id}@example.com`, plan: 'free', settings: '{}', grantNano: 0n });
    await storage.ledger.commit({ entries: [{ accountId: id, kind: 'topup', amountNano: PAYMENT }] });
  }

  const reversal = (
    accountId: string,
    payment: string,
    kind: 'refund' | 'dispute',
    objectId: string,
    totalNano: bigint,
    final = false,
  ): PaymentReversed => ({
    id: `stripe:${kind}:${objectId}`,
    accountId,
    processor: 'stripe',
    kind,
    paymentReference: payment,
    paymentNano: PAYMENT,
    totalNano,
    final,
    note: `${kind} ${objectId}`,
    at: Date.now(),
  });

  async function moved(storage: Storage, paymentReversed: PaymentReversed): Promise<bigint | undefined> {
    return (await storage.ledger.commit({ entries: [], paymentReversed })).reversedNano;
  }

  async function expectBalance(storage: Storage, accountId: string, balance: bigint): Promise<void> {
    expect((await storage.accounts.get(accountId))?.balanceNano).toBe(balance);
    expect(await storage.ledger.sum(accountId)).toBe(balance);
  }

  it('a full refund then disputes of the same charge (a second dispute object too) take back the payment once', async () => {
    database = await createTestDatabase(dialect);
    const storage = await open();
    await paidAccount(storage, 'acct_a');
    expect(await moved(storage, reversal('acct_a', 'pi_a', 'refund', 'ch_a', PAYMENT))).toBe(-PAYMENT);
    expect(await moved(storage, reversal('acct_a', 'pi_a', 'dispute', 'dp_1', PAYMENT))).toBe(0n);
    expect(await moved(storage, reversal('acct_a', 'pi_a', 'dispute', 'dp_1', PAYMENT, true))).toBe(0n);
    expect(await moved(storage, reversal('acct_a', 'pi_a', 'dispute', 'dp_2', PAYMENT))).toBe(0n);
    await expectBalance(storage, 'acct_a', 0n);
  });

  it('a dispute then a refund: the payment is taken back once, and a won dispute leaves the refund standing', async () => {
    database = await createTestDatabase(dialect);
    const storage = await open();
    await paidAccount(storage, 'acct_b');
    expect(await moved(storage, reversal('acct_b', 'pi_b', 'dispute', 'dp_b', PAYMENT))).toBe(-PAYMENT);
    expect(await moved(storage, reversal('acct_b', 'pi_b', 'refund', 'ch_b', usd(5)))).toBe(0n);
    expect(await moved(storage, reversal('acct_b', 'pi_b', 'refund', 'ch_b', PAYMENT))).toBe(0n);
    expect(await moved(storage, reversal('acct_b', 'pi_b', 'dispute', 'dp_b', 0n, true))).toBe(0n);
    await expectBalance(storage, 'acct_b', 0n);
  });

  it('two dispute objects: the second takes back only what the first left; each won gives back its share', async () => {
    database = await createTestDatabase(dialect);
    const storage = await open();
    await paidAccount(storage, 'acct_c');
    expect(await moved(storage, reversal('acct_c', 'pi_c', 'dispute', 'dp_1', usd(15)))).toBe(-usd(15));
    expect(await moved(storage, reversal('acct_c', 'pi_c', 'dispute', 'dp_2', PAYMENT))).toBe(-usd(5));
    await expectBalance(storage, 'acct_c', 0n);
    expect(await moved(storage, reversal('acct_c', 'pi_c', 'dispute', 'dp_1', 0n, true))).toBe(0n);
    expect(await moved(storage, reversal('acct_c', 'pi_c', 'dispute', 'dp_2', 0n, true))).toBe(PAYMENT);
    await expectBalance(storage, 'acct_c', PAYMENT);
  });

  it('a refund and a dispute applied at once by two writers take back the payment once', async () => {
    database = await createTestDatabase(dialect);
    const first = await open();
    const second = await open(true);
    await paidAccount(first, 'acct_d');
    const rounds = 15;
    for (let round = 0; round < rounds; round++) {
      const payment = `pi_d${round}`;
      const answers = await Promise.all([
        moved(first, reversal('acct_d', payment, 'refund', `ch_d${round}`, PAYMENT)),
        moved(second, reversal('acct_d', payment, 'dispute', `dp_d${round}`, PAYMENT)),
        moved(second, reversal('acct_d', payment, 'dispute', `dp_e${round}`, PAYMENT)),
      ]);
      expect(
        answers.reduce((sum, n) => sum! + n!, 0n),
        `round ${round}`,
      ).toBe(-PAYMENT);
    }
    await expectBalance(first, 'acct_d', PAYMENT - BigInt(rounds) * PAYMENT);
  });
});
