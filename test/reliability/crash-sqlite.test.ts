/**
 * Crash, embedded database: SIGKILL with 100 requests in flight (half streaming), then a restart on the same
 * files. Holds live in the process's memory, so none survives it; every answer a client received in full was
 * debited exactly what it was told (from SQLite and the ledger journal the killed process left); usage, keys and
 * ledger agree; SQLite's integrity check is `ok`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/storage/index.js';
import { JOURNAL_FILE } from '../../src/storage/sqlite-journal.js';
import { createTestDatabase } from '../support/databases.js';
import { auditLedger } from '../support/ledger-audit.js';
import { chat, crash, IN_FLIGHT, reservationsOpen, type Crash } from './crash-support.js';

let run: Crash | undefined;
afterAll(() => run?.close());

describe('SIGKILL with 100 requests in flight (SQLite)', { timeout: 90_000 }, () => {
  it('restarts with no open reservation, a consistent ledger and an intact database', async () => {
    const database = await createTestDatabase('sqlite');
    run = await crash(database);
    expect(run.openBeforeKill).toBeGreaterThanOrEqual(IN_FLIGHT);

    // The database as the killed process left it, with the charges it had confirmed in its ledger journal (the
    // next start writes those to SQLite first, before anything reads it).
    const journaled = readFileSync(join(database.dataDir, JOURNAL_FILE), 'utf8').split('\n').filter(Boolean).length;
    await (await openStorage({ dataDir: database.dataDir, ledgerJournal: true })).close();
    const audit = await auditLedger(database);
    expect(audit.integrity).toBe('ok');
    expect(audit.problems).toEqual([]);
    const complete = run.outcomes.filter((o) => o.costNano !== undefined);
    expect(complete.length).toBeGreaterThanOrEqual(10);
    // Durability: every answer received in full was debited, exactly what the client was told, once.
    for (const o of complete) expect(audit.debitedRequests.get(o.requestId), o.requestId).toBe(o.costNano);
    // What a crash may lose: the charges of requests whose answer had not reached the client in full.
    const lost = run.outcomes.filter((o) => o.costNano === undefined && !audit.debitedRequests.has(o.requestId));
    expect(lost.length).toBeGreaterThanOrEqual(IN_FLIGHT / 2); // the streams that were cut
    console.log(
      `crash (sqlite): ${run.openBeforeKill} open at the kill, ${complete.length} answers complete, ${audit.debits} debits (${journaled} batches from the journal), ${lost.length} cut without a charge`,
    );

    // Restart: holds lived in the killed process's memory, so none is open; every account is served again.
    await run.gateway.start();
    expect(await reservationsOpen(run.gateway)).toBe(0);
    for (const account of run.accounts) {
      const res = await chat(run.gateway, account.key, {
        messages: [{ role: 'user', content: 'quick after the crash' }],
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(await reservationsOpen(run.gateway)).toBe(0);
    await run.gateway.kill('SIGTERM');
    const after = await auditLedger(database);
    expect(after.integrity).toBe('ok');
    expect(after.problems).toEqual([]);
    expect(after.debits).toBe(audit.debits + run.accounts.length);
  });
});
