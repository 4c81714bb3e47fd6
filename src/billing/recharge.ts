/**
 * Auto-recharge: when a debit leaves an account below its threshold, charge the configured amount through the
 * payment processor and credit it. Processors are pluggable; the built-in `invoice` processor records the
 * charge on the account's monthly invoice and credits at once.
 */
import type { InvoiceInput, Storage } from '../storage/index.js';
import { newId } from '../storage/index.js';
import type { AccountCache, AccountState } from './accounts.js';
import type { Nano } from '../money/index.js';

export interface ChargeResult {
  reference: string;
  /** A line for the account's invoice, when the processor bills that way. */
  invoice?: InvoiceInput;
}

export interface PaymentProcessor {
  readonly id: string;
  charge(request: { accountId: string; amountNano: Nano; reason: string }): Promise<ChargeResult>;
}

export const invoiceProcessor: PaymentProcessor = {
  id: 'invoice',
  async charge({ accountId, amountNano }) {
    const reference = newId('invline');
    const month = new Date().toISOString().slice(0, 7);
    return { reference, invoice: { accountId, month, kind: 'auto_recharge', amountNano, processor: 'invoice', reference } };
  },
};

export class AutoRecharger {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly storage: Storage,
    private readonly processor: PaymentProcessor,
    private readonly accounts: AccountCache,
    private readonly onError?: (error: unknown) => void,
  ) {}

  /** After a debit: recharge once if the account is below its threshold and no recharge is under way. */
  consider(state: AccountState): void {
    const { enabled, thresholdNano, amountNano } = state.settings.autoRecharge;
    if (!enabled || amountNano <= 0n || state.balanceNano >= thresholdNano || this.running.has(state.id)) return;
    const run = this.recharge(state.id, amountNano)
      .catch((error) => this.onError?.(error))
      .finally(() => this.running.delete(state.id));
    this.running.set(state.id, run);
  }

  async idle(): Promise<void> {
    await Promise.all(this.running.values());
  }

  private async recharge(accountId: string, amountNano: Nano): Promise<void> {
    const charge = await this.processor.charge({ accountId, amountNano, reason: 'auto-recharge' });
    const result = await this.storage.ledger.commit({
      entries: [{ accountId, kind: 'recharge', amountNano, note: `auto-recharge via ${this.processor.id} ${charge.reference}` }],
      invoices: charge.invoice ? [charge.invoice] : [],
    });
    const balance = result.balances.get(accountId);
    if (balance) this.accounts.confirm(accountId, balance.balanceNano, balance.version);
  }
}
