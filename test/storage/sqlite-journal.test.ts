/**
 * The embedded gateway's ledger journal: a charge is durable once appended, every read sees it, a process killed
 * before SQLite had it loses nothing, and no batch is written twice.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalInUseError, openStorage, type Storage } from '../../src/storage/index.js';
import { APPLIED_KEY, APPLY_MS, JOURNAL_FILE, VERSION_CHECK_MS } from '../../src/storage/sqlite-journal.js';
import { tempDir } from '../support/databases.js';

const slot = { day: '2026-11-24', environment: 'live', model: 'm' };
const debit = (requestId: string, amountNano: bigint) => ({
  accountId: 'acct_1',
  kind: 'debit' as const,
  amountNano: -amountNano,
  requestId,
  promptTokens: 3,
  completionTokens: 2,
  usage: slot,
});

/** What SQLite itself holds (read on a connection of its own, as an auditor or a backup would). */
function stored(dataDir: string): { balance: bigint; ledger: bigint; debits: number; applied: string | undefined } {
  const db = new Database(join(dataDir, 'tollgate.db'), { readonly: true });
  db.defaultSafeIntegers(true);
  try {
    const balance = (
      db.prepare("SELECT balance_nano FROM accounts WHERE id = 'acct_1'").get() as { balance_nano: bigint }
    ).balance_nano;
    const ledger = (
      db.prepare("SELECT COALESCE(SUM(amount_nano), 0) AS s FROM ledger WHERE account_id = 'acct_1'").get() as {
        s: bigint;
      }
    ).s;
    const debits = Number(
      (db.prepare("SELECT COUNT(*) AS n FROM ledger WHERE kind = 'debit'").get() as { n: bigint }).n,
    );
    const applied = (
      db.prepare('SELECT value FROM meta WHERE key = ?').get(APPLIED_KEY) as { value: string } | undefined
    )?.value;
    return { balance: BigInt(balance), ledger: BigInt(ledger), debits, applied };
  } finally {
    db.close();
  }
}

describe('the ledger journal (embedded SQLite)', () => {
  const dirs: string[] = [];
  const open: Storage[] = [];

  afterEach(async () => {
    for (const storage of open.splice(0).reverse()) await storage.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  async function start(
    dataDir?: string,
    options: { onJournalError?: (error: unknown) => void } = {},
  ): Promise<{ storage: Storage; dataDir: string }> {
    const dir = dataDir ?? tempDir();
    if (!dataDir) dirs.push(dir);
    const storage = await openStorage({ dataDir: dir, ledgerJournal: true, ...options });
    open.push(storage);
    return { storage, dataDir: dir };
  }

  async function withAccount(): Promise<{ storage: Storage; dataDir: string }> {
    const started = await start();
    await started.storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano: 1_000_000n,
    });
    return started;
  }

  it('confirms a charge by appending it, writes it to SQLite within a few ms, then empties the journal', async () => {
    const { storage, dataDir } = await withAccount();
    const journal = join(dataDir, JOURNAL_FILE);
    const result = await storage.ledger.commit({ entries: [debit('r1', 300n), debit('r2', 200n)] });
    expect(result.applied).toEqual([-300n, -200n]);
    expect(result.balancesAfter).toEqual([999_700n, 999_500n]);
    // Confirmed: in the journal, not yet in SQLite.
    expect(readFileSync(journal, 'utf8')).toContain('"requestId":"r2"');
    expect(stored(dataDir).debits).toBe(0);
    // The journal and its lock, and nothing else of theirs, next to the database.
    expect(
      readdirSync(dataDir)
        .filter((name) => name.startsWith(JOURNAL_FILE))
        .sort(),
    ).toEqual([JOURNAL_FILE, `${JOURNAL_FILE}.lock`]);
    await sleep(APPLY_MS * 5);
    expect(stored(dataDir)).toMatchObject({ balance: 999_500n, ledger: 999_500n, debits: 2 });
    expect(statSync(journal).size).toBe(0);
  });

  it('lets every read see the charges it confirmed, before they reach SQLite on their own', async () => {
    const { storage } = await withAccount();
    for (let i = 0; i < 5; i++) await storage.ledger.commit({ entries: [debit(`r${i}`, 100n)] });
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(999_500n);
    expect(await storage.ledger.sum('acct_1')).toBe(999_500n);
    expect(await storage.ledger.debitedFor('r4')).toBe(100n);
    expect(await storage.usage.totals('acct_1', 'live', '2026-11-01', '2026-11-30')).toEqual({
      requests: 5,
      promptTokens: 15,
      completionTokens: 10,
      creditsNano: 500n,
    });
    expect((await storage.ledger.list('acct_1', { limit: 10 })).filter((e) => e.kind === 'debit')).toHaveLength(5);
  });

  it('clamps a debit at the balance across batches still in the journal, as SQLite would', async () => {
    const { storage, dataDir } = await withAccount();
    const first = await storage.ledger.commit({ entries: [debit('r1', 700_000n)] });
    const second = await storage.ledger.commit({ entries: [debit('r2', 700_000n)] });
    expect(first.applied).toEqual([-700_000n]);
    expect(second.applied).toEqual([-300_000n]);
    await storage.close();
    open.splice(open.indexOf(storage), 1);
    expect(stored(dataDir)).toMatchObject({ balance: 0n, ledger: 0n, debits: 2 });
  });

  it('loses no confirmed charge when the process is killed before SQLite has it, and writes none twice', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    // A separate process confirms three batches and is killed at once (SIGKILL: no timer, no exit handler runs).
    const script = `
      import { openStorage } from './src/storage/index.ts';
      const storage = await openStorage({ dataDir: ${JSON.stringify(dataDir)}, ledgerJournal: true });
      await storage.ledger.createAccount({ id: 'acct_1', email: 'a@example.com', plan: 'free', settings: '{}', grantNano: 1000000n });
      const debit = (r, n) => ({ accountId: 'acct_1', kind: 'debit', amountNano: -n, requestId: r, usage: ${JSON.stringify(slot)} });
      for (const [r, n] of [['r1', 100n], ['r2', 200n], ['r3', 300n]]) await storage.ledger.commit({ entries: [debit(r, n)] });
      process.kill(process.pid, 'SIGKILL');
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      encoding: 'utf8',
    });
    expect(child.signal, child.stderr).toBe('SIGKILL');
    expect(stored(dataDir).debits).toBe(0);
    expect(readFileSync(join(dataDir, JOURNAL_FILE), 'utf8').trim().split('\n')).toHaveLength(3);

    // The next start writes them before anything reads the database.
    const { storage } = await start(dataDir);
    expect(stored(dataDir)).toMatchObject({ balance: 999_400n, ledger: 999_400n, debits: 3, applied: '3' });
    expect(await storage.ledger.debitedFor('r3')).toBe(300n);
    expect(statSync(join(dataDir, JOURNAL_FILE)).size).toBe(0);
    // Numbering goes on after the restart: a later batch is not taken for one already written.
    await storage.ledger.commit({ entries: [debit('r4', 400n)] });
    await storage.close();
    open.splice(0);
    expect(stored(dataDir)).toMatchObject({ balance: 999_000n, debits: 4, applied: '4' });
  });

  it('skips batches SQLite already has (killed between its commit and emptying the journal), and a torn last line', async () => {
    const { storage, dataDir } = await withAccount();
    await storage.ledger.commit({ entries: [debit('r1', 100n)] });
    await storage.close();
    open.splice(0);
    expect(stored(dataDir)).toMatchObject({ debits: 1, applied: '1' });
    const record = (seq: number, requestId: string) =>
      JSON.stringify({
        seq,
        at: Date.now(),
        batch: { entries: [{ ...debit(requestId, 10n), amountNano: { $big: '-10' } }] },
      });
    // Batch 1 again (already in SQLite), batch 2 (not yet), and half of a third line cut by the crash.
    writeFileSync(
      join(dataDir, JOURNAL_FILE),
      `${record(1, 'r1')}\n${record(2, 'r2')}\n${record(3, 'r3').slice(0, 40)}`,
    );
    await start(dataDir);
    expect(stored(dataDir)).toMatchObject({ balance: 999_890n, debits: 2, applied: '2' });
  });

  it('refuses to start on a journal whose middle line is not a record, rather than drop its charges', async () => {
    const { storage, dataDir } = await withAccount();
    await storage.close();
    open.splice(0);
    writeFileSync(
      join(dataDir, JOURNAL_FILE),
      `not a record\n${JSON.stringify({ seq: 1, at: 0, batch: { entries: [] } })}\n`,
    );
    await expect(openStorage({ dataDir, ledgerJournal: true })).rejects.toThrow(/line 1 is not a journal record/);
  });

  it('does not lose what another process (the CLI) wrote to an account meanwhile', async () => {
    const { storage, dataDir } = await withAccount();
    await storage.ledger.commit({ entries: [debit('r1', 100n)] });
    // The CLI opens the same database without the journal and grants credit directly.
    const cli = await openStorage({ dataDir });
    await cli.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'grant', amountNano: 5_000n, note: 'cli' }] });
    await cli.close();
    await storage.ledger.commit({ entries: [debit('r2', 100n)] });
    await sleep(APPLY_MS * 5);
    expect(stored(dataDir)).toMatchObject({ balance: 1_004_800n, ledger: 1_004_800n, debits: 2 });
    expect((await storage.accounts.get('acct_1'))?.balanceNano).toBe(1_004_800n);
  });

  it('plans the next batch on the balance in SQLite once another connection has committed', async () => {
    const { storage, dataDir } = await withAccount();
    await storage.ledger.commit({ entries: [debit('r1', 100n)] });
    const cli = await openStorage({ dataDir });
    await sleep(APPLY_MS * 3);
    // r2 waits in the journal (memory: 999,800) while the CLI takes 999,700 off SQLite's 999,900.
    await storage.ledger.commit({ entries: [debit('r2', 100n)] });
    await cli.ledger.commit({
      entries: [{ accountId: 'acct_1', kind: 'correction', amountNano: -999_700n, note: 'cli' }],
    });
    await sleep(VERSION_CHECK_MS + 1);
    // 200 - 100 leaves 100: r3 is told what it really takes, not what memory thought was there.
    const result = await storage.ledger.commit({ entries: [debit('r3', 500n)] });
    await cli.close();
    expect(result.applied).toEqual([-100n]);
    await sleep(APPLY_MS * 5);
    expect(stored(dataDir)).toMatchObject({ balance: 0n, ledger: 0n, debits: 3 });
  });

  it('writes the batches of one apply as writing them one by one would: balances, ledger, daily usage, keys', async () => {
    // The same batches through the journal (applied in one transaction, each row written once) and straight to SQLite.
    const slotOf = (model: string) => ({ ...slot, model });
    const charge = (accountId: string, keyId: string, model: string, requestId: string, amountNano: bigint) => ({
      accountId,
      kind: 'debit' as const,
      amountNano: -amountNano,
      requestId,
      keyId,
      model,
      promptTokens: 4,
      completionTokens: 1,
      usage: slotOf(model),
    });
    const batches = [
      {
        entries: [charge('acct_1', 'key_1', 'm1', 'r1', 300n), charge('acct_2', 'key_2', 'm1', 'r2', 50n)],
        keysUsed: [{ keyId: 'key_1', at: 5 }],
      },
      {
        entries: [charge('acct_1', 'key_1', 'm2', 'r3', 200n)],
        keysUsed: [
          { keyId: 'key_1', at: 9 },
          { keyId: 'key_2', at: 7 },
        ],
      },
      { entries: [{ accountId: 'acct_2', kind: 'grant' as const, amountNano: 1_000n, note: 'top-up' }] },
      {
        entries: [charge('acct_2', 'key_2', 'm1', 'r4', 5_000n), charge('acct_1', 'key_1', 'm1', 'r5', 100n)],
        keysUsed: [{ keyId: 'key_1', at: 8 }],
      },
      {
        entries: [],
        usage: [
          { accountId: 'acct_1', ...slotOf('m2'), requests: 1, promptTokens: 7, completionTokens: 0, creditsNano: 0n },
        ],
      },
    ];
    const rowsAfter = async (ledgerJournal: boolean) => {
      const dataDir = tempDir();
      dirs.push(dataDir);
      const storage = await openStorage({ dataDir, ledgerJournal });
      for (const [i, grantNano] of [1_000n, 500n].entries()) {
        await storage.ledger.createAccount({
          id: `acct_${i + 1}`,
          email: `${i}@example.com`,
          plan: 'free',
          settings: '{}',
          grantNano,
        });
        await storage.keys.insert({
          id: `key_${i + 1}`,
          accountId: `acct_${i + 1}`,
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
      for (const batch of batches) await storage.ledger.commit(batch);
      await storage.close();
      const db = new Database(join(dataDir, 'tollgate.db'), { readonly: true });
      try {
        return {
          accounts: db.prepare('SELECT id, balance_nano, version FROM accounts ORDER BY id').all(),
          ledger: db
            .prepare(
              'SELECT account_id, kind, amount_nano, balance_after_nano, request_id, key_id FROM ledger ORDER BY rowid',
            )
            .all(),
          usage: db
            .prepare(
              'SELECT account_id, model, requests, prompt_tokens, completion_tokens, credits_nano FROM usage_daily ORDER BY account_id, model',
            )
            .all(),
          keys: db.prepare('SELECT id, spent_nano, last_used_at FROM api_keys ORDER BY id').all(),
        };
      } finally {
        db.close();
      }
    };
    const journaled = await rowsAfter(true);
    expect(journaled).toEqual(await rowsAfter(false));
    // And the figures themselves: acct_2's 5,000 debit is clamped at the 1,450 it then holds.
    expect(journaled.accounts).toEqual([
      { id: 'acct_1', balance_nano: 400, version: 4 },
      { id: 'acct_2', balance_nano: 0, version: 4 },
    ]);
    expect(journaled.keys).toEqual([
      { id: 'key_1', spent_nano: 600, last_used_at: 8 },
      { id: 'key_2', spent_nano: 1_500, last_used_at: 7 },
    ]);
    expect(journaled.usage).toEqual([
      { account_id: 'acct_1', model: 'm1', requests: 2, prompt_tokens: 8, completion_tokens: 2, credits_nano: 400 },
      { account_id: 'acct_1', model: 'm2', requests: 2, prompt_tokens: 11, completion_tokens: 1, credits_nano: 200 },
      { account_id: 'acct_2', model: 'm1', requests: 2, prompt_tokens: 8, completion_tokens: 2, credits_nano: 1_500 },
    ]);
  });

  it('is held by one process at a time: a second gateway on the same directory writes to SQLite directly', async () => {
    const { storage, dataDir } = await withAccount();
    await storage.ledger.commit({ entries: [debit('r1', 100n)] });
    const errors: unknown[] = [];
    const second = await openStorage({ dataDir, ledgerJournal: true, onJournalError: (error) => errors.push(error) });
    try {
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(JournalInUseError);
      await second.ledger.commit({ entries: [debit('r2', 100n)] });
      expect(await second.ledger.debitedFor('r2')).toBe(100n);
    } finally {
      await second.close();
    }
    await sleep(APPLY_MS * 5);
    // Each charge once: the second process neither replayed nor emptied the first one's journal.
    expect(stored(dataDir)).toMatchObject({ balance: 999_800n, ledger: 999_800n, debits: 2 });
    expect(await storage.ledger.debitedFor('r1')).toBe(100n);
  });
});
