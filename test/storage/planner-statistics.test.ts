/**
 * SQLite's planner has statistics on a grown ledger: without them, looking a request up by its id read the whole
 * account's rows (about 2 s at 3 million rows) instead of the request-id index. Opening the storage gathers them.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/index.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

let database: TestDatabase | undefined;
afterEach(async () => {
  await database?.drop();
});

it('gathers the ledger’s statistics when it opens, so a request is found by its index', async () => {
  database = await createTestDatabase('sqlite');
  const storage = await openStorage({ dataDir: database.dataDir });
  await storage.ledger.createAccount({
    id: 'acct_s',
    email: 's@example.com',
    plan: 'free',
    settings: '{}',
    grantNano: 10n ** 12n,
  });
  for (let batch = 0; batch < 20; batch++) {
    const entries = Array.from({ length: 200 }, (_, i) => ({
      accountId: 'acct_s',
      kind: 'debit' as const,
      amountNano: -1n,
      requestId: `req_${batch}_${i}`,
      answerId: `chatcmpl-${batch}_${i}`,
    }));
    await storage.ledger.commit({ entries });
  }
  const sqlite = new Database(join(database.dataDir, 'tollgate.db'), { readonly: true });
  const analyzed = () =>
    sqlite.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_stat1'").get() as { n: number };
  const before = analyzed().n;
  await storage.close();

  const reopened = await openStorage({ dataDir: database.dataDir });
  const stats = sqlite.prepare("SELECT idx FROM sqlite_stat1 WHERE tbl = 'ledger'").all() as Array<{ idx: string }>;
  expect(before).toBe(0);
  expect(stats.map((s) => s.idx)).toEqual(expect.arrayContaining(['ledger_request', 'ledger_answer']));
  expect((await reopened.charges.find('acct_s', 'chatcmpl-7_42'))?.requestId).toBe('req_7_42');
  sqlite.close();
  await reopened.close();
});
