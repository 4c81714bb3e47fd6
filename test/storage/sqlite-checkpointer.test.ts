import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/index.js';
import { CHECKPOINT_MS, SqliteCheckpointer } from '../../src/storage/sqlite-checkpointer.js';
import { tempDir } from '../support/databases.js';

describe('SQLite WAL checkpoints in a worker thread', () => {
  const dirs: string[] = [];
  const cleanups: Array<() => Promise<void> | void> = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function database(): { db: Database.Database; file: string } {
    const dir = tempDir();
    dirs.push(dir);
    const file = join(dir, 'test.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)');
    cleanups.push(() => {
      db.close();
    });
    return { db, file };
  }

  /** Commits `count` rows of 2 KB in groups of 20, pausing between groups; returns the WAL file's largest size. */
  async function write(db: Database.Database, file: string, count: number, afterCommit: () => void): Promise<number> {
    const insert = db.prepare('INSERT INTO rows (payload) VALUES (?)');
    let largest = 0;
    for (let i = 0; i < count; i++) {
      insert.run('x'.repeat(2048));
      afterCommit();
      if (i % 20 === 19) {
        largest = Math.max(largest, statSync(`${file}-wal`).size);
        await sleep(CHECKPOINT_MS + 5);
      }
    }
    return largest;
  }

  it('keeps the WAL small while commits come in; without it the writer lets the WAL grow to 1,000 pages', async () => {
    const plain = database();
    const withoutWorker = await write(plain.db, plain.file, 1500, () => {});
    expect(withoutWorker).toBeGreaterThan(3_000_000);

    const { db, file } = database();
    const checkpointer = new SqliteCheckpointer(file);
    cleanups.push(() => checkpointer.stop());
    // The worker starts with the first commit; wait for its first checkpoint before measuring.
    await write(db, file, 1, () => checkpointer.written());
    for (let waited = 0; checkpointer.checkpoints === 0 && waited < 10_000; waited += 10) await sleep(10);
    expect(checkpointer.checkpoints).toBeGreaterThan(0);
    const withWorker = await write(db, file, 1500, () => checkpointer.written());
    expect(withWorker).toBeLessThan(withoutWorker / 4);
    expect(checkpointer.checkpoints).toBeGreaterThan(10);
    expect(db.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 1501 });
  });

  it('sleeps while nothing is written', async () => {
    const { db, file } = database();
    const checkpointer = new SqliteCheckpointer(file);
    cleanups.push(() => checkpointer.stop());
    await write(db, file, 1, () => checkpointer.written());
    for (let waited = 0; checkpointer.checkpoints === 0 && waited < 10_000; waited += 10) await sleep(10);
    const before = checkpointer.checkpoints;
    await sleep(20 * CHECKPOINT_MS);
    expect(checkpointer.checkpoints).toBe(before);
  });

  it('closes its connection when storage closes, so the last connection folds the WAL into the database', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const storage = await openStorage({ dataDir });
    await storage.ledger.createAccount({ id: 'acct_1', email: 'a@example.com', plan: 'free', settings: '{}', grantNano: 10n ** 12n });
    for (let i = 0; i < 50; i++) {
      await storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -1000n, requestId: `r${i}` }] });
      await sleep(1);
    }
    await storage.close();
    expect(existsSync(join(dataDir, 'tollgate.db-wal'))).toBe(false);
    const reopened = await openStorage({ dataDir });
    cleanups.push(() => reopened.close());
    expect(await reopened.ledger.sum('acct_1')).toBe(10n ** 12n - 50n * 1000n);
  });
});
