/**
 * A payment's or a top-up's audit entry is written by the money writer in the ledger's own transaction: with the
 * credit when it is applied, never without it, and not again when a purchase's event comes twice.
 */
import { expect, it } from 'vitest';
import type { AuditEntry, Storage } from '../../src/storage/index.js';
import { LEDGER_CONFIGURATIONS, storageWithAccount } from '../support/databases.js';
import { describeEach } from '../support/backends.js';

const NANO = 1_000_000_000n;

describeEach(LEDGER_CONFIGURATIONS)(
  'audit entries in money batches on %s (ledger journal: %s)',
  (dialect, ledgerJournal) => {
    const open = storageWithAccount(dialect, ledgerJournal);
    let storage: Storage;

    async function setup(): Promise<void> {
      storage = await open();
    }

    const entry = (action: string): AuditEntry => ({
      accountId: 'acct_1',
      actor: { type: 'operator', id: 'cli' },
      action,
      target: { type: 'account', id: 'acct_1' },
      after: { amount: '2' },
    });

    it('writes a top-up and its entry together', async () => {
      await setup();
      await storage.ledger.commit({
        entries: [{ accountId: 'acct_1', kind: 'topup', amountNano: 2n * NANO }],
        audit: [entry('credits.add')],
      });
      expect(await storage.ledger.sum('acct_1')).toBe(2n * NANO);
      const [row] = await storage.audit.list('acct_1', { limit: 10 });
      expect(row).toMatchObject({
        action: 'credits.add',
        actorType: 'operator',
        actorId: 'cli',
        after: { amount: '2' },
      });
    });

    it('writes neither when the batch fails', async () => {
      await setup();
      await expect(
        storage.ledger.commit({
          entries: [{ accountId: 'acct_unknown', kind: 'topup', amountNano: NANO }],
          audit: [{ ...entry('credits.add'), accountId: 'acct_unknown' }],
        }),
      ).rejects.toThrow();
      expect(await storage.audit.list('acct_unknown', { limit: 10 })).toEqual([]);
    });

    it('writes a purchase entry once, however often its event comes', async () => {
      await setup();
      await storage.purchases.insert({
        id: 'cp_1',
        accountId: 'acct_1',
        amountNano: 10n * NANO,
        currency: 'usd',
        processor: 'stripe',
        createdAt: Date.now(),
      });
      const paid = (eventId: string) =>
        storage.ledger.commit({
          entries: [{ accountId: 'acct_1', kind: 'topup', amountNano: 10n * NANO }],
          audit: [{ ...entry('payment.purchase'), actor: { type: 'processor', id: 'stripe' } }],
          purchasePaid: {
            purchaseId: 'cp_1',
            processor: 'stripe',
            eventId,
            eventType: 'checkout.session.completed',
            paymentIntentId: 'pi_1',
            at: Date.now(),
          },
        });
      await paid('evt_1');
      await paid('evt_2');
      expect(await storage.ledger.sum('acct_1')).toBe(10n * NANO);
      const rows = await storage.audit.list('acct_1', { limit: 10 });
      expect(rows.map((r) => [r.action, r.actorType, r.actorId])).toEqual([
        ['payment.purchase', 'processor', 'stripe'],
      ]);
    });
  },
);
