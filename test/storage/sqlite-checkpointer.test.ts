import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/index.js';
import { SqliteCheckpointer, type CheckpointPolicy } from '../../src/storage/sqlite-checkpointer.js';
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

  /** Commits `count` rows of 2 KB in groups of 50, pausing between groups; returns the WAL file's largest size. */
  async function write(db: Database.Database, file: string, count: number, afterCommit: () => void): Promise<number> {
    const insert = db.prepare('INSERT INTO rows (payload) VALUES (?)');
    let largest = 0;
    for (let i = 0; i < count; i++) {
      insert.run('x'.repeat(2048));
      afterCommit();
      if (i % 50 === 49) {
        largest = Math.max(largest, statSync(`${file}-wal`).size);
        await sleep(20);
      }
    }
    return largest;
  }

  /** A checkpointer for `file` with the given policy (the rest the defaults), stopped after the test. */
  function startCheckpointer(file: string, policy: Partial<CheckpointPolicy>): SqliteCheckpointer {
    const checkpointer = new SqliteCheckpointer(file, undefined, policy);
    cleanups.push(() => checkpointer.stop());
    return checkpointer;
  }

  /** The WAL header's checkpoint sequence number: SQLite increments it each time a writer restarts the WAL. */
  function walRestarts(file: string): number {
    return readFileSync(`${file}-wal`).readUInt32BE(12);
  }

  async function firstCheckpoint(checkpointer: SqliteCheckpointer): Promise<void> {
    for (let waited = 0; checkpointer.checkpoints === 0 && waited < 10_000; waited += 10) await sleep(10);
    expect(checkpointer.checkpoints).toBeGreaterThan(0);
  }

  it("folds the WAL into the database by itself: with the writer's own checkpoint off, the WAL stays small", async () => {
    const plain = database();
    plain.db.pragma('wal_autocheckpoint = 0');
    const withoutWorker = await write(plain.db, plain.file, 1500, () => {});
    expect(withoutWorker).toBeGreaterThan(6_000_000);

    const { db, file } = database();
    db.pragma('wal_autocheckpoint = 0');
    const checkpointer = startCheckpointer(file, { intervalMs: 10, restartCommits: 50, idleMs: 1_000 });
    const withWorker = await write(db, file, 1500, () => checkpointer.written());
    expect(withWorker).toBeLessThan(withoutWorker / 4);
    expect(checkpointer.checkpoints).toBeGreaterThan(10);
    expect(walRestarts(file)).toBeGreaterThan(10);
    expect(db.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 1500 });
  });

  it('sleeps while nothing is written', async () => {
    const { db, file } = database();
    const checkpointer = startCheckpointer(file, { intervalMs: 10, restartCommits: 100, idleMs: 1_000 });
    await write(db, file, 1, () => checkpointer.written());
    await firstCheckpoint(checkpointer);
    const before = checkpointer.checkpoints;
    await sleep(400);
    expect(checkpointer.checkpoints).toBe(before);
  });

  // A checkpoint that catches up with the whole WAL makes the next commit restart it, and SQLite fsyncs the new
  // header inside that commit, on the event loop. Commits further apart than the interval each paid that.
  it('restarts the WAL once per set number of commits, not after every commit of a light load', async () => {
    const { db, file } = database();
    const checkpointer = startCheckpointer(file, { intervalMs: 10, restartCommits: 40, idleMs: 1_000 });
    const insert = db.prepare('INSERT INTO rows (payload) VALUES (?)');
    insert.run('x');
    const start = walRestarts(file);
    for (let i = 0; i < 120; i++) {
      insert.run('x');
      checkpointer.written();
      await sleep(12);
    }
    // Still a checkpoint after (nearly) every commit: each flush small.
    expect(checkpointer.checkpoints).toBeGreaterThan(60);
    expect(walRestarts(file) - start).toBeGreaterThanOrEqual(2);
    expect(walRestarts(file) - start).toBeLessThanOrEqual(4);
    expect(db.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 121 });
  });

  it('restarts the WAL once it holds the set number of pages, however few commits wrote them', async () => {
    const { db, file } = database();
    const checkpointer = startCheckpointer(file, { intervalMs: 10, restartCommits: 1_000, restartPages: 50 });
    const insert = db.prepare('INSERT INTO rows (payload) VALUES (?)');
    insert.run('x');
    const start = walRestarts(file);
    // 40 commits of ~20 pages each, 15 ms apart: far fewer commits than the set number, many more pages.
    for (let i = 0; i < 40; i++) {
      db.transaction(() => {
        for (let row = 0; row < 20; row++) insert.run('x'.repeat(3000));
      })();
      checkpointer.written();
      await sleep(15);
    }
    expect(walRestarts(file) - start).toBeGreaterThanOrEqual(3);
  });

  it('holds no read transaction on the WAL once commits stop, so a full checkpoint by another connection goes through', async () => {
    const { db, file } = database();
    const checkpointer = startCheckpointer(file, { intervalMs: 10, restartCommits: 100, idleMs: 100 });
    const insert = db.prepare('INSERT INTO rows (payload) VALUES (?)');
    insert.run('x');
    checkpointer.written();
    await firstCheckpoint(checkpointer);
    insert.run('x');
    checkpointer.written();
    await sleep(30);
    // Between commits the worker's reader keeps the WAL from being restarted: a TRUNCATE checkpoint is busy.
    db.pragma('busy_timeout = 0');
    expect(db.pragma('wal_checkpoint(TRUNCATE)')).toEqual([
      { busy: 1, log: expect.any(Number), checkpointed: expect.any(Number) },
    ]);
    await sleep(400);
    expect(db.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
  });

  it('closes its connection when storage closes, so the last connection folds the WAL into the database', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const storage = await openStorage({ dataDir });
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 10n ** 12n,
    });
    for (let i = 0; i < 50; i++) {
      await storage.ledger.commit({
        entries: [{ accountId: 'acct_1', kind: 'debit', amountNano: -1000n, requestId: `r${i}` }],
      });
      await sleep(1);
    }
    await storage.close();
    expect(existsSync(join(dataDir, 'tollgate.db-wal'))).toBe(false);
    const reopened = await openStorage({ dataDir });
    cleanups.push(() => reopened.close());
    expect(await reopened.ledger.sum('acct_1')).toBe(10n ** 12n - 50n * 1000n);
  });
});
