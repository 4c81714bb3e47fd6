/**
 * PostgreSQL's money writer as replicas use it: several writers charging one account. Each batch stays one round
 * trip however the others move the balance, and ledger ids follow the order in which commits took effect.
 */
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { NOW_MICROSECONDS_SQL, ledgerIdSql } from '../../src/storage/pg-ledger-ids.js';
import { PgWriter } from '../../src/storage/pg-writer.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';
import { needsPostgres } from '../support/backends.js';

const debit = (requestId: string, amountNano: bigint) => ({
  entries: [{ accountId: 'acct_1', kind: 'debit' as const, amountNano: -amountNano, requestId }],
});

needsPostgres('PostgreSQL money writer, several replicas on one account', () => {
  let database: TestDatabase;
  let storage: Storage;
  const pools: pg.Pool[] = [];

  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end();
    await storage?.close();
    await database?.drop();
  });

  async function setup(grantNano: bigint): Promise<void> {
    database = await createTestDatabase('postgres');
    storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano,
    });
  }

  /** A replica's writer on a pool of its own, and the number of queries it has sent. */
  function replica(): { writer: PgWriter; queries: () => number } {
    const pool = new pg.Pool({ connectionString: database.databaseUrl, max: 2 });
    pools.push(pool);
    let sent = 0;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        sent++;
        return query(...args);
      };
    });
    return { writer: new PgWriter(pool), queries: () => sent };
  }

  it('commits each batch in one round trip while another replica moves the same balance in between', async () => {
    await setup(10_000n);
    const [a, b] = [replica(), replica()];
    for (let i = 0; i < 5; i++) {
      await a.writer.commit(debit(`a${i}`, 100n));
      await b.writer.commit(debit(`b${i}`, 10n));
    }
    // One query per batch each: none planned on a balance the other replica had since moved.
    expect([a.queries(), b.queries()]).toEqual([5, 5]);
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(10_000n - 550n);
    const rows = (await storage.ledger.list('acct_1', { limit: 20 })).reverse();
    expect(rows.map((r) => r.requestId)).toEqual([null, 'a0', 'b0', 'a1', 'b1', 'a2', 'b2', 'a3', 'b3', 'a4', 'b4']);
    rows.slice(1).forEach((row, k) => expect(row.balanceAfterNano).toBe(rows[k]!.balanceAfterNano + row.amountNano));
  });

  it('still clamps a debit at the balance another replica left, in two round trips', async () => {
    await setup(1_000n);
    const [a, b] = [replica(), replica()];
    await b.writer.commit(debit('b0', 900n));
    const result = await a.writer.commit(debit('a0', 300n));
    expect(result.applied).toEqual([-100n]);
    expect(result.balancesAfter).toEqual([0n]);
    expect(result.balances.get('acct_1')?.balanceNano).toBe(0n);
    // The refused one-trip statement, then the locked read and the write.
    expect(a.queries()).toBe(3);
    expect(await storage.ledger.sum('acct_1')).toBe(0n);
  });

  it('writes a debit’s billing text in one round trip and in two, and null without it', async () => {
    await setup(1_000n);
    const a = replica();
    const billing = JSON.stringify({ tokens: { input: 10, output: 2 }, note: 'it\'s "q" {b} \\ ü' });
    // A debit with billing and one without, in one batch (one array per column on the one-trip path).
    const withBilling = (requestId: string, amountNano: bigint) => ({
      entries: [{ ...debit(requestId, amountNano).entries[0]!, billing }, ...debit(`${requestId}_plain`, 1n).entries],
    });
    await a.writer.commit(withBilling('one', 100n));
    expect(a.queries()).toBe(1);
    // More than the balance: the one-trip statement refuses it, and the locked path clamps it.
    await a.writer.commit(withBilling('two', 5_000n));
    expect(a.queries()).toBe(4);
    const rows = await storage.ledger.list('acct_1', { limit: 10 });
    const billingOf = (requestId: string) => rows.find((r) => r.requestId === requestId)?.billing;
    expect([billingOf('one'), billingOf('one_plain'), billingOf('two')]).toEqual([billing, null, billing]);
    expect(rows.find((r) => r.requestId === 'two')?.amountNano).toBe(-899n);
  });

  it('gives a batch that waited for the account lock ids after the commit it waited for', async () => {
    await setup(10_000n);
    const a = replica();
    // Another replica's transaction holds the account while `a` plans and sends its batch; then it debits the
    // account, with an id from the database's clock as PgWriter forms them, and commits.
    const holder = new pg.Client({ connectionString: database.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM accounts WHERE id = 'acct_1' FOR UPDATE");
      const waiting = a.writer.commit(debit('a0', 100n));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const id = ledgerIdSql(NOW_MICROSECONDS_SQL, "'holder'");
      await holder.query(
        `INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, created_at) VALUES (${id}, 'acct_1', 'debit', -5, 9995, 0)`,
      );
      await holder.query(
        "UPDATE accounts SET balance_nano = balance_nano - 5, version = version + 1 WHERE id = 'acct_1'",
      );
      await holder.query('COMMIT');
      const result = await waiting;
      expect(result.balancesAfter).toEqual([9_895n]);
    } finally {
      await holder.end();
    }
    const rows = (await storage.ledger.list('acct_1', { limit: 10 })).reverse();
    expect(rows.map((r) => r.amountNano)).toEqual([10_000n, -5n, -100n]);
    rows.slice(1).forEach((row, k) => expect(row.balanceAfterNano).toBe(rows[k]!.balanceAfterNano + row.amountNano));
  });
});
