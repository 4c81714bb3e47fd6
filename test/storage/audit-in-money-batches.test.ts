/**
 * A payment's, a top-up's or a grant's audit entry is written by the money writer in the ledger's own transaction:
 * with the credit when it is applied, never without it, and not again when a purchase's event, a recharge's credit or
 * a refund comes twice.
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

    it('writes a reversal entry when the reversal changes something, and none for a repeated or stale one', async () => {
      await setup();
      await storage.ledger.commit({ entries: [{ accountId: 'acct_1', kind: 'topup', amountNano: 20n * NANO }] });
      const refunded = (totalNano: bigint) =>
        storage.ledger.commit({
          entries: [],
          audit: [
            {
              ...entry('payment.reversal'),
              actor: { type: 'processor', id: 'stripe' },
              after: { kind: 'refund', total: totalNano },
            },
          ],
          paymentReversed: {
            id: 'stripe:refund:ch_1',
            accountId: 'acct_1',
            processor: 'stripe',
            kind: 'refund',
            paymentReference: 'pi_1',
            paymentNano: 20n * NANO,
            totalNano,
            final: false,
            note: 'refund',
            at: Date.now(),
          },
        });
      expect((await refunded(5n * NANO)).reversedNano).toBe(-5n * NANO);
      expect((await refunded(5n * NANO)).reversedNano).toBe(0n);
      expect((await refunded(13n * NANO)).reversedNano).toBe(-8n * NANO);
      // Stripe's earlier running total, delivered late: nothing changes.
      expect((await refunded(5n * NANO)).reversedNano).toBe(0n);
      expect(await storage.ledger.sum('acct_1')).toBe(7n * NANO);
      const rows = await storage.audit.list('acct_1', { limit: 10, action: 'payment.reversal' });
      expect(rows.map((r) => r.after)).toEqual([
        { kind: 'refund', total: String(13n * NANO) },
        { kind: 'refund', total: String(5n * NANO) },
      ]);
    });

    it('writes a card recharge entry once, whether its answer or its event credits it', async () => {
      await setup();
      await storage.recharges.begin({
        id: 'rch_1',
        accountId: 'acct_1',
        amountNano: 10n * NANO,
        processor: 'stripe',
        at: Date.now(),
      });
      const credited = () =>
        storage.ledger.commit({
          entries: [{ accountId: 'acct_1', kind: 'recharge', amountNano: 10n * NANO }],
          audit: [{ ...entry('payment.recharge'), actor: { type: 'system', id: null } }],
          rechargePaid: { rechargeId: 'rch_1', paymentIntentId: 'pi_1', at: Date.now() },
        });
      expect((await credited()).rechargePaid).toBe(true);
      expect((await credited()).rechargePaid).toBe(false);
      expect(await storage.ledger.sum('acct_1')).toBe(10n * NANO);
      const rows = await storage.audit.list('acct_1', { limit: 10 });
      expect(rows.map((r) => [r.action, r.actorType, r.actorId])).toEqual([['payment.recharge', 'system', null]]);
    });

    it('writes an invoiced recharge entry only from the replica that finds the balance still below', async () => {
      await setup();
      const recharged = () =>
        storage.ledger.commit({
          entries: [{ accountId: 'acct_1', kind: 'recharge', amountNano: 10n * NANO }],
          audit: [{ ...entry('payment.recharge'), actor: { type: 'system', id: null } }],
          whileBelow: { accountId: 'acct_1', thresholdNano: 5n * NANO },
        });
      await Promise.all([recharged(), recharged()]);
      expect(await storage.ledger.sum('acct_1')).toBe(10n * NANO);
      expect(await storage.audit.list('acct_1', { limit: 10 })).toHaveLength(1);
    });

    it("writes a new account's grant entry with the grant, and none for an account opened without one", async () => {
      await setup();
      const grant = (accountId: string): AuditEntry => ({
        accountId,
        actor: { type: 'system', id: null },
        action: 'credits.grant',
        target: { type: 'account', id: accountId },
        after: { amount: '5' },
      });
      const opened = (id: string, grantNano: bigint) =>
        storage.ledger.createAccount({
          id,
          email: `${id}@example.com`,
          plan: 'free',
          settings: '{}',
          grantNano,
          audit: [grant(id)],
        });
      await opened('acct_granted', 5n * NANO);
      await opened('acct_none', 0n);
      expect(await storage.ledger.sum('acct_granted')).toBe(5n * NANO);
      const rows = await storage.audit.list('acct_granted', { limit: 10 });
      expect(rows.map((r) => [r.action, r.actorType, r.after])).toEqual([['credits.grant', 'system', { amount: '5' }]]);
      expect(await storage.audit.list('acct_none', { limit: 10 })).toEqual([]);
    });
  },
);
