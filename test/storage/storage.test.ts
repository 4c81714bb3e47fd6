import { afterEach, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/index.js';
import { connect } from '../../src/storage/connect.js';
import { migrateTo, migrateToLatest } from '../../src/storage/migrate.js';
import { DIALECTS, createTestDatabase, type TestDatabase } from '../support/databases.js';
import { describeEach, needsPostgres } from '../support/backends.js';

const usd = (n: number) => BigInt(Math.round(n * 1000)) * 1_000_000n;

// SQLite twice: as the CLI opens it, and as the gateway does, with charges confirmed through the ledger journal.
const CONFIGURATIONS = DIALECTS.flatMap(
  (dialect) =>
    (dialect === 'sqlite'
      ? [
          [dialect, false],
          [dialect, true],
        ]
      : [[dialect, false]]) as Array<[typeof dialect, boolean]>,
);

describeEach(CONFIGURATIONS)('storage on %s (ledger journal: %s)', (dialect, ledgerJournal) => {
  let database: TestDatabase;
  let storage: Storage;
  const open = async () => openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl, ledgerJournal });

  afterEach(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function setup(): Promise<void> {
    database = await createTestDatabase(dialect);
    storage = await open();
  }

  it('lets a payment taken back leave the balance below zero, once per running total; spending then takes nothing', async () => {
    await setup();
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: usd(5),
    });
    const refund = (totalNano: bigint) => ({
      id: 'stripe:refund:ch_1',
      accountId: 'acct_1',
      processor: 'stripe',
      kind: 'refund' as const,
      paymentReference: 'pi_1',
      paymentNano: usd(20),
      totalNano,
      final: false,
      note: 'refund',
      at: Date.now(),
    });
    expect((await storage.ledger.commit({ entries: [], paymentReversed: refund(usd(8)) })).reversedNano).toBe(-usd(8));
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(-usd(3));
    // A debit on a balance below zero moves nothing (it must never turn into a credit).
    const debit = await storage.ledger.commit({
      entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -usd(1), requestId: 'req_neg' }],
    });
    expect(debit.applied).toEqual([0n]);
    expect((await storage.ledger.commit({ entries: [], paymentReversed: refund(usd(8)) })).reversedNano).toBe(0n);
    expect((await storage.ledger.commit({ entries: [], paymentReversed: refund(usd(5)) })).reversedNano).toBe(0n);
    await storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'topup', amountNano: usd(10) }] });
    expect((await storage.ledger.commit({ entries: [], paymentReversed: refund(usd(9)) })).reversedNano).toBe(-usd(1));
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(usd(6));
    expect(await storage.ledger.sum('acct_1')).toBe(usd(6));
  });

  it('writes a whileBelow recharge and its invoice line only while the balance is below the threshold', async () => {
    await setup();
    await storage.ledger.createAccount({
      id: 'acct_w',
      email: 'w@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: usd(4),
    });
    const recharge = () =>
      storage.ledger.commit({
        entries: [{ accountId: 'acct_w', kind: 'recharge', amountNano: usd(10), note: 'auto-recharge via invoice' }],
        invoices: [
          {
            accountId: 'acct_w',
            month: '2026-11',
            kind: 'auto_recharge',
            amountNano: usd(10),
            processor: 'invoice',
            reference: 'invline_w',
          },
        ],
        whileBelow: { accountId: 'acct_w', thresholdNano: usd(5) },
      });
    expect((await recharge()).whileBelow).toBe(true);
    expect((await recharge()).whileBelow).toBe(false);
    expect((await storage.accounts.get('acct_w'))?.balanceNano).toBe(usd(14));
    expect(await storage.ledger.sum('acct_w')).toBe(usd(14));
  });

  it('creates an account with its sign-up grant in the ledger', async () => {
    await setup();
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: usd(5),
    });
    const account = await storage.accounts.get('acct_1');
    expect(account?.balanceNano).toBe(usd(5));
    expect(await storage.ledger.sum('acct_1')).toBe(usd(5));
    const [grant] = await storage.ledger.list('acct_1', { limit: 10 });
    expect(grant).toMatchObject({ kind: 'grant', amountNano: usd(5), balanceAfterNano: usd(5) });
  });

  it('keeps balance = ledger sum and never lets a debit take the balance below zero', async () => {
    await setup();
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 1000n,
    });
    const slot = { day: '2026-11-22', environment: 'live', model: 'm' };
    const result = await storage.ledger.commit({
      entries: [
        {
          accountId: 'acct_1',
          kind: 'debit',
          amountNano: -600n,
          requestId: 'r1',
          promptTokens: 10,
          completionTokens: 5,
          usage: slot,
        },
        {
          accountId: 'acct_1',
          kind: 'debit',
          amountNano: -600n,
          requestId: 'r2',
          promptTokens: 10,
          completionTokens: 5,
          usage: slot,
        },
      ],
    });
    expect(result.applied).toEqual([-600n, -400n]);
    expect(result.balances.get('acct_1')?.balanceNano).toBe(0n);
    expect(await storage.ledger.sum('acct_1')).toBe(0n);
    expect(await storage.ledger.debitedFor('r2')).toBe(400n);
    const totals = await storage.usage.totals('acct_1', 'live', '2026-11-01', '2026-11-30');
    expect(totals).toEqual({ requests: 2, promptTokens: 20, completionTokens: 10, creditsNano: 1000n });
  });

  it('stores text with quotes, backslashes and other characters exactly as given', async () => {
    await setup();
    const email = "o'brien\\ops@example.com";
    await storage.ledger.createAccount({
      id: "acct_'q",
      email,
      plan: 'free',
      settings: '{"note":"a\\\\b \'c\'"}',
      grantNano: 1000n,
    });
    // Also what an array literal treats specially (PostgreSQL's one-round-trip batch sends its rows as arrays).
    const notes = [
      "it's",
      'C:\\path\\x',
      "both ' and \\",
      'plain',
      'ünïcödé 😀 $$ -- /* */ ;',
      "'",
      '\\',
      'a "quoted", {braced} note',
      'NULL',
      '',
      ' padded ',
      '"',
      '\\"',
    ];
    for (const note of notes)
      await storage.ledger.commit({ entries: [{ accountId: "acct_'q", kind: 'grant', amountNano: 1n, note }] });
    const account = await storage.accounts.get("acct_'q");
    expect(account?.email).toBe(email);
    const stored = (await storage.ledger.list("acct_'q", { limit: 20 })).map((entry) => entry.note);
    for (const note of notes) expect(stored).toContain(note);
    expect(account?.balanceNano).toBe(1000n + BigInt(notes.length));
  });

  it('holds money exactly beyond 2^53 nano-USD', async () => {
    await setup();
    const huge = 2n ** 60n + 7n;
    await storage.ledger.createAccount({
      id: 'acct_big',
      email: 'b@example.com',
      plan: 'enterprise',
      settings: '{}',
      grantNano: huge,
    });
    await storage.ledger.commit({ entries: [{ accountId: 'acct_big', kind: 'debit', amountNano: -1n }] });
    expect((await storage.accounts.get('acct_big'))?.balanceNano).toBe(huge - 1n);
    expect(await storage.ledger.sum('acct_big')).toBe(huge - 1n);
  });

  // Two writers on one database: replicas on PostgreSQL, or SQLite without the journal. A second process cannot see
  // the charges the journal's owner confirmed in its last 20 ms (docs/adr/0037-money-writers-outside-kysely.md).
  it.skipIf(ledgerJournal)(
    'plans every batch on the current balance when another writer moved it in between',
    async () => {
      await setup();
      const other = await open();
      try {
        await storage.ledger.createAccount({
          id: 'acct_1',
          email: 'a@example.com',
          plan: 'free',
          settings: '{}',
          grantNano: 1000n,
        });
        const debit = (amountNano: bigint, requestId: string) => ({
          entries: [{ accountId: 'acct_1', kind: 'debit' as const, amountNano, requestId }],
        });
        expect((await storage.ledger.commit(debit(-100n, 'r1'))).applied).toEqual([-100n]);
        // Another replica spends most of what is left: the first writer's own view (900) is now stale.
        expect((await other.ledger.commit(debit(-850n, 'r2'))).applied).toEqual([-850n]);
        const third = await storage.ledger.commit(debit(-100n, 'r3'));
        expect(third.applied).toEqual([-50n]);
        expect(third.balances.get('acct_1')?.balanceNano).toBe(0n);
        // A plan change bumps the version too; a grant after it lands on the right balance.
        await other.accounts.update('acct_1', { plan: 'pro' });
        await storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'grant', amountNano: 70n }] });
        await other.ledger.commit(debit(-20n, 'r4'));
        await storage.ledger.commit(debit(-30n, 'r5'));
        expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(20n);
        expect(await storage.ledger.sum('acct_1')).toBe(20n);
        const rows = (await storage.ledger.list('acct_1', { limit: 10 })).reverse();
        expect(rows.map((r) => r.amountNano)).toEqual([1000n, -100n, -850n, -50n, 70n, -20n, -30n]);
        rows
          .slice(1)
          .forEach((row, i) => expect(row.balanceAfterNano).toBe(rows[i]!.balanceAfterNano + row.amountNano));
      } finally {
        await other.close();
      }
    },
  );

  it('stores keys by hash and revokes them', async () => {
    await setup();
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 0n,
    });
    await storage.keys.insert({
      id: 'key_1',
      accountId: 'acct_1',
      name: 'k',
      keyHash: 'h1',
      hint: 'tg-live-abcd...wxyz',
      environment: 'live',
      permissions: 'project',
      models: ['gpt-4o'],
      spendLimitNano: 5n,
      createdAt: 1,
    });
    expect((await storage.keys.getByHash('h1'))?.models).toEqual(['gpt-4o']);
    const revoked = await storage.keys.revoke('key_1', 42);
    expect(revoked?.revokedAt).toBe(42);
    expect((await storage.keys.revoke('key_1', 99))?.revokedAt).toBe(42);
    const found = await storage.keys.getByHashes(['h1', 'no-such-hash']);
    expect([...found.keys()]).toEqual(['h1']);
    expect(found.get('h1')).toMatchObject({ id: 'key_1', revokedAt: 42 });
    expect((await storage.keys.getByHashes([])).size).toBe(0);
  });

  it('writes a batch over several accounts (ledger, balances, daily usage, key spend and last use), and two writers committing the same accounts at once lose nothing', async () => {
    await setup();
    const other = await open();
    try {
      const accounts = ['acct_a', 'acct_b', 'acct_c'];
      for (const [i, id] of accounts.entries()) {
        await storage.ledger.createAccount({
          id,
          email: `${id}@example.com`,
          plan: 'free',
          settings: '{}',
          grantNano: 1_000_000n,
        });
        await storage.keys.insert({
          id: `key_${i}`,
          accountId: id,
          name: 'k',
          keyHash: `h${i}`,
          hint: 'tg-live-...',
          environment: 'live',
          permissions: 'project',
          models: [],
          spendLimitNano: null,
          createdAt: 1,
        });
      }
      const slot = { day: '2026-11-23', environment: 'live', model: 'm' };
      let n = 0;
      // Each writer's batches name the accounts in a different order; both keep planning on balances the other moves.
      const batch = (order: number[], at: number) => ({
        entries: order.map((i) => ({
          accountId: accounts[i]!,
          kind: 'debit' as const,
          amountNano: -(BigInt(i) + 1n),
          requestId: `r${++n}`,
          keyId: `key_${i}`,
          model: 'm',
          promptTokens: 3,
          completionTokens: 2,
          note: "it's",
          usage: slot,
        })),
        keysUsed: order.map((i) => ({ keyId: `key_${i}`, at })),
      });
      const rounds = 40;
      const run = (writer: Storage, order: number[]) =>
        (async () => {
          for (let r = 0; r < rounds; r++) await writer.ledger.commit(batch(order, 1_000 + r));
        })();
      await Promise.all([
        run(storage, [0, 1, 2]),
        run(other, [2, 1, 0]),
        run(storage, [1, 0, 2]),
        run(other, [2, 0, 1]),
      ]);

      for (const [i, id] of accounts.entries()) {
        const spent = BigInt(4 * rounds) * (BigInt(i) + 1n);
        expect((await storage.accounts.get(id))?.balanceNano).toBe(1_000_000n - spent);
        expect(await storage.ledger.sum(id)).toBe(1_000_000n - spent);
        const key = await storage.keys.get(`key_${i}`);
        expect(key?.spentNano).toBe(spent);
        expect(key?.lastUsedAt).toBe(1_000 + rounds - 1);
        expect(await storage.usage.totals(id, 'live', slot.day, slot.day)).toEqual({
          requests: 4 * rounds,
          promptTokens: 12 * rounds,
          completionTokens: 8 * rounds,
          creditsNano: spent,
        });
        const rows = (await storage.ledger.list(id, { limit: 500 })).reverse();
        expect(rows).toHaveLength(1 + 4 * rounds);
        expect(rows[1]).toMatchObject({
          kind: 'debit',
          keyId: `key_${i}`,
          model: 'm',
          promptTokens: 3,
          completionTokens: 2,
          note: "it's",
        });
        rows
          .slice(1)
          .forEach((row, k) => expect(row.balanceAfterNano).toBe(rows[k]!.balanceAfterNano + row.amountNano));
      }
    } finally {
      await other.close();
    }
  });

  it('lets only one of several concurrent starters claim the first-start bootstrap', async () => {
    await setup();
    const others = await Promise.all([open(), open(), open()]);
    const claims = await Promise.all([storage, ...others].map((s) => s.meta.claim('bootstrapped', 'x')));
    expect(claims.filter(Boolean)).toHaveLength(1);
    await Promise.all(others.map((s) => s.close()));
  });
});

needsPostgres('a retried commit on postgres', () => {
  it('does not debit a request twice when the first attempt committed', async () => {
    const database = await createTestDatabase('postgres');
    const storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
    try {
      await storage.ledger.createAccount({
        id: 'acct_1',
        email: 'a@example.com',
        plan: 'free',
        settings: '{}',
        grantNano: 1_000n,
      });
      const batch = {
        entries: [{ accountId: 'acct_1', kind: 'debit' as const, amountNano: -300n, requestId: 'req_1' }],
      };
      await storage.ledger.commit(batch);
      // The committer marks a batch that failed before; only then does the writer look for debits already written.
      const retry = await storage.ledger.commit({ ...batch, retried: true });
      expect(retry.applied).toEqual([-300n]);
      expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(700n);
      expect(await storage.ledger.sum('acct_1')).toBe(700n);
      expect(await storage.ledger.debitedFor('req_1')).toBe(300n);
    } finally {
      await storage.close();
      await database.drop();
    }
  });
});

needsPostgres('migrations on postgres', () => {
  it('are applied once when several processes start together on an empty database', async () => {
    const database = await createTestDatabase('postgres');
    try {
      const starters = await Promise.all(
        Array.from({ length: 5 }, () => openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl })),
      );
      await starters[0]!.ledger.createAccount({
        id: 'acct_1',
        email: 'a@example.com',
        plan: 'free',
        settings: '{}',
        grantNano: 1n,
      });
      expect((await starters[4]!.accounts.get('acct_1'))?.balanceNano).toBe(1n);
      await Promise.all(starters.map((s) => s.close()));
    } finally {
      await database.drop();
    }
  });
});

describe('migration 009 on sqlite', () => {
  it('drops the balance check of an existing database and keeps its rows, indexes and foreign keys', async () => {
    const database = await createTestDatabase('sqlite');
    const { db, sqlite: handle } = connect({ dataDir: database.dataDir });
    const sqlite = handle!;
    try {
      await migrateTo(db, '008_card_recharges');
      sqlite
        .prepare(
          "INSERT INTO accounts (id, email, plan, balance_nano, version, settings, created_at) VALUES ('acct_1', 'a@example.com', 'free', 700, 3, '{}', 1)",
        )
        .run();
      sqlite
        .prepare(
          "INSERT INTO api_keys (id, account_id, name, key_hash, hint, environment, permissions, created_at) VALUES ('key_1', 'acct_1', 'k', 'h', 'x', 'live', 'full', 1)",
        )
        .run();
      expect(() => sqlite.prepare("UPDATE accounts SET balance_nano = -1 WHERE id = 'acct_1'").run()).toThrow(/CHECK/);

      expect(await migrateToLatest(db)).toContain('009_payment_reversals');
      expect(sqlite.prepare("SELECT balance_nano, version, email FROM accounts WHERE id = 'acct_1'").get()).toEqual({
        balance_nano: 700n,
        version: 3n,
        email: 'a@example.com',
      });
      sqlite.prepare("UPDATE accounts SET balance_nano = -1 WHERE id = 'acct_1'").run();
      expect(() =>
        sqlite
          .prepare("INSERT INTO accounts (id, email, plan, created_at) VALUES ('acct_2', 'a@example.com', 'free', 1)")
          .run(),
      ).toThrow(/UNIQUE/);
      expect(() =>
        sqlite
          .prepare(
            "INSERT INTO api_keys (id, account_id, name, key_hash, hint, environment, permissions, created_at) VALUES ('key_2', 'nobody', 'k', 'h2', 'x', 'live', 'full', 1)",
          )
          .run(),
      ).toThrow(/FOREIGN KEY/);
      expect(sqlite.pragma('foreign_keys', { simple: true })).toBe(1n);
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
