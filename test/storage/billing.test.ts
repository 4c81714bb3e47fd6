/** Per-kind billing in storage: a debit's billing text in the ledger, and a stored response's context tokens. */
import { expect, it } from 'vitest';
import type { Storage } from '../../src/storage/index.js';
import { LEDGER_CONFIGURATIONS, storageWithAccount } from '../support/databases.js';
import { describeEach } from '../support/backends.js';

/** Billing as a caller builds it, with what JSON and PostgreSQL's array literals escape. */
const BILLING = JSON.stringify({
  tokens: { input: 1200, cached_input: 800, output: 95, reasoning: 40 },
  pricesNano: { input: '2500', cached_input: '1250', output: '10000' },
  note: 'it\'s "quoted", {braced} \\ ünïcödé 😀',
});

// PostgreSQL here takes the one-round-trip path (pg-writer.test.ts covers both of its paths).
describeEach(LEDGER_CONFIGURATIONS)('billing storage on %s (ledger journal: %s)', (dialect, ledgerJournal) => {
  const open = storageWithAccount(dialect, ledgerJournal, 10_000n);
  let storage: Storage;

  async function setup(): Promise<void> {
    storage = await open();
  }

  it('reads back a debit’s billing text as written, and null for entries without it', async () => {
    await setup();
    await storage.ledger.commit({
      entries: [
        { accountId: 'acct_1', kind: 'debit', amountNano: -300n, requestId: 'r1', billing: BILLING },
        { accountId: 'acct_1', kind: 'debit', amountNano: -200n, requestId: 'r2' },
      ],
    });
    const rows = await storage.ledger.list('acct_1', { limit: 10 });
    const billingOf = (requestId: string | null) => rows.find((r) => r.requestId === requestId)?.billing;
    expect(billingOf('r1')).toBe(BILLING);
    expect(billingOf('r2')).toBeNull();
    expect(rows.find((r) => r.kind === 'grant')?.billing).toBeNull();
  });

  it('keeps a response’s context tokens, beyond 32 bits, for its own account only', async () => {
    await setup();
    const now = Date.now();
    const responses = storage.responses;
    await responses.record({
      id: 'resp_1',
      accountId: 'acct_1',
      providerId: 'openai',
      stateful: true,
      contextTokens: 5_000_000_000,
      now,
    });
    await responses.record({ id: 'resp_2', accountId: 'acct_1', providerId: 'openai', stateful: true, now });
    expect(await responses.find('acct_1', 'resp_1')).toEqual({
      providerId: 'openai',
      stateful: true,
      contextTokens: 5_000_000_000,
    });
    expect((await responses.find('acct_1', 'resp_2'))?.contextTokens).toBeUndefined();
    expect(await responses.find('acct_other', 'resp_1')).toBeUndefined();
  });
});
