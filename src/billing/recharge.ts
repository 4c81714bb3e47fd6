/**
 * Auto-recharge: when a debit leaves an account below its threshold, charge the configured amount through the
 * account's payment processor and credit it. An account without a processor is never recharged: credit comes
 * only from an operator, the sign-up grant, or a processor that takes the money. The built-in `invoice`
 * processor records the charge on the account's monthly invoice and credits at once; only an operator puts an
 * account on it, with a monthly ceiling. A self-serve processor (a card the user saved, `payments/`) credits only
 * when its charge succeeded, exactly once (./recharge-outcome.ts). Every recharge is also bounded by the
 * configured maximum amount and number per account per UTC day.
 */
import type { Config } from '../config/index.js';
import type { EventSink } from '../events/index.js';
import type { AccountSettings, InvoiceInput, Storage } from '../storage/index.js';
import { newId } from '../storage/index.js';
import { utcDay, type AccountCache, type AccountState } from './accounts.js';
import { parseUsd, usdString, type Nano } from '../money/index.js';
import { RechargeFailure, creditRecharge, rechargeAudit, recordRechargeFailure } from './recharge-outcome.js';

export interface ChargeResult {
  reference: string;
  /** A line for the account's invoice, when the processor bills that way. */
  invoice?: InvoiceInput;
  /** The processor's recharge row: the credit moves it to succeeded, so it is credited once (`creditRecharge`). */
  rechargeId?: string;
  /** What was charged, when not the amount asked (a recharge taken over from a process that died). */
  amountNano?: Nano;
  /** The charge is not final yet: the processor's event credits it later. */
  pending?: boolean;
}

export interface PaymentProcessor {
  readonly id: string;
  /**
   * Whether an account's own user may turn auto-recharge on with this processor: only one that takes the money
   * from a payment method the user saved. The others are an operator's to assign.
   */
  readonly selfServe: boolean;
  /**
   * Charges the account, or answers undefined when it charged nothing and nothing failed (another recharge of
   * the account is in flight, or the balance is back at the threshold). A charge that took no money throws a
   * RechargeFailure.
   */
  charge(request: {
    accountId: string;
    amountNano: Nano;
    thresholdNano: Nano;
    reason: string;
  }): Promise<ChargeResult | undefined>;
}

export const invoiceProcessor: PaymentProcessor = {
  id: 'invoice',
  selfServe: false,
  charge({ accountId, amountNano }) {
    const reference = newId('invline');
    const month = new Date().toISOString().slice(0, 7);
    return Promise.resolve({
      reference,
      invoice: { accountId, month, kind: 'auto_recharge', amountNano, processor: 'invoice', reference },
    });
  },
};

/** The payment processors by id; the built-in `invoice` is always one of them. */
export type PaymentProcessors = ReadonlyMap<string, PaymentProcessor>;

export function paymentProcessors(extra: PaymentProcessor[] = []): PaymentProcessors {
  return new Map([invoiceProcessor, ...extra].map((processor) => [processor.id, processor]));
}

export interface RechargeLimits {
  maxAmountNano: Nano;
  maxPerDay: number;
}

export function rechargeLimits(config: Config): RechargeLimits {
  const { max_amount, max_per_day } = config.credits.auto_recharge;
  return { maxAmountNano: parseUsd(max_amount), maxPerDay: max_per_day };
}

/** The processor that charges an account's auto-recharges; none means auto-recharge cannot run. */
export function rechargeProcessor(
  settings: AccountSettings,
  processors: PaymentProcessors,
): PaymentProcessor | undefined {
  return settings.billing ? processors.get(settings.billing.processor) : undefined;
}

/**
 * Whether an account's own user may turn auto-recharge on or change it, and if not, why (shown to them):
 * only with a payment method they saved (`payment_method_required` otherwise), never on operator billing.
 */
export function selfServeRecharge(
  settings: AccountSettings,
  processors: PaymentProcessors,
  savedPaymentMethod: boolean,
): { available: boolean; reason: string | null; code?: 'payment_method_required' } {
  const processor = rechargeProcessor(settings, processors);
  if (processor && !processor.selfServe)
    return {
      available: false,
      reason: `Auto-recharge on this account is set up by the operator (billed through ${processor.id}).`,
    };
  const selfServe = [...processors.values()].some((p) => p.selfServe);
  if (!selfServe) {
    return {
      available: false,
      reason:
        'Auto-recharge needs a saved payment method, and this gateway has no payment processor to take one. The operator adds credit.',
      ...(savedPaymentMethod ? {} : { code: 'payment_method_required' }),
    };
  }
  if (!savedPaymentMethod) {
    return {
      available: false,
      reason:
        'Auto-recharge needs a saved payment method: buy credit once by card (the card is saved), then turn it on.',
      code: 'payment_method_required',
    };
  }
  return { available: true, reason: null };
}

/** The self-serve processor, if this gateway has one. */
export function selfServeProcessor(processors: PaymentProcessors): PaymentProcessor | undefined {
  return [...processors.values()].find((p) => p.selfServe);
}

export interface RechargeOptions {
  processors: PaymentProcessors;
  limits: RechargeLimits;
  /** A recharge a limit held back (the account is not asked again until its settings or the UTC day change). */
  onRefused?: (accountId: string, reason: string) => void;
  /** Where `credit.recharge_failed` goes. */
  events?: EventSink;
  /** An account's balance or settings changed here: every replica's cache reloads it. */
  onAccountChanged?: (accountId: string) => void | Promise<void>;
  onFailed?: (accountId: string, failure: RechargeFailure) => void;
}

export class AutoRecharger {
  private readonly running = new Map<string, Promise<void>>();
  /** Accounts a limit held back, with the settings and day it happened on. */
  private readonly refused = new Map<string, { settings: AccountSettings; day: string }>();

  constructor(
    private readonly storage: Storage,
    private readonly options: RechargeOptions,
    private readonly accounts: AccountCache,
    private readonly onError?: (error: unknown) => void,
  ) {}

  /** After a debit: recharge once if the account is below its threshold and no recharge is under way. */
  consider(state: AccountState): void {
    const { settings } = state;
    const { enabled, thresholdNano, amountNano } = settings.autoRecharge;
    if (!enabled || amountNano <= 0n || state.balanceNano >= thresholdNano || this.running.has(state.id)) return;
    const processor = rechargeProcessor(settings, this.options.processors);
    if (!processor) return;
    const refused = this.refused.get(state.id);
    if (refused && refused.settings === settings && refused.day === utcDay()) return;
    const run = this.recharge(state.id, settings, processor)
      .catch((error) => this.onError?.(error))
      .finally(() => this.running.delete(state.id));
    this.running.set(state.id, run);
  }

  async idle(): Promise<void> {
    await Promise.all(this.running.values());
  }

  private async recharge(accountId: string, settings: AccountSettings, processor: PaymentProcessor): Promise<void> {
    const amountNano = settings.autoRecharge.amountNano;
    const refusal = await this.refusal(accountId, amountNano, settings.billing?.monthlyCeilingNano ?? null);
    if (refusal) {
      this.refused.set(accountId, { settings, day: utcDay() });
      this.options.onRefused?.(accountId, refusal);
      return;
    }
    this.refused.delete(accountId);
    let charge: ChargeResult | undefined;
    try {
      charge = await processor.charge({
        accountId,
        amountNano,
        thresholdNano: settings.autoRecharge.thresholdNano,
        reason: 'auto-recharge',
      });
    } catch (error) {
      if (!(error instanceof RechargeFailure)) throw error;
      return this.failed(accountId, amountNano, error);
    }
    if (!charge || charge.pending) return;
    const charged = charge.amountNano ?? amountNano;
    const result = charge.rechargeId
      ? await creditRecharge(this.storage, {
          accountId,
          rechargeId: charge.rechargeId,
          amountNano: charged,
          processor: processor.id,
          reference: charge.reference,
        })
      : await this.storage.ledger.commit({
          entries: [
            {
              accountId,
              kind: 'recharge',
              amountNano: charged,
              note: `auto-recharge via ${processor.id} ${charge.reference}`,
            },
          ],
          invoices: charge.invoice ? [charge.invoice] : [],
          audit: [
            rechargeAudit({ accountId, amountNano: charged, processor: processor.id, reference: charge.reference }),
          ],
          // An invoice line takes no money until it is written: of the replicas that saw this dip, only the one
          // that finds the balance still below the threshold writes it (the card path claims its row instead).
          ...(charge.invoice ? { whileBelow: { accountId, thresholdNano: settings.autoRecharge.thresholdNano } } : {}),
        });
    const balance = result.balances.get(accountId);
    if (balance) this.accounts.confirm(accountId, balance.balanceNano, balance.version);
    // Every replica reloads the account: the credit, or (a dip another replica recharged) the balance that ended it.
    if (charge.rechargeId || charge.invoice) await this.options.onAccountChanged?.(accountId);
  }

  private async failed(accountId: string, amountNano: Nano, failure: RechargeFailure): Promise<void> {
    this.options.onFailed?.(accountId, failure);
    // The account is reloaded everywhere before the event goes out: a debit by a client that heard of the failure
    // may recharge again (the event is this run's last write; the run is over once it is in).
    await recordRechargeFailure(this.storage, this.options.events, accountId, amountNano, failure, async (account) => {
      if (account) this.accounts.applyRecord(account);
      await this.options.onAccountChanged?.(accountId);
    });
  }

  /** Which limit a recharge of `amountNano` now would pass, if any. */
  private async refusal(accountId: string, amountNano: Nano, ceilingNano: Nano | null): Promise<string | undefined> {
    const { maxAmountNano, maxPerDay } = this.options.limits;
    if (amountNano > maxAmountNano)
      return `the amount ${usdString(amountNano)} USD is over credits.auto_recharge.max_amount (${usdString(maxAmountNano)} USD)`;
    const now = new Date();
    const today = await this.storage.ledger.rechargesSince(
      accountId,
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()),
    );
    if (today.count >= maxPerDay)
      return `${today.count} auto-recharges today already (credits.auto_recharge.max_per_day)`;
    if (ceilingNano === null) return undefined;
    const month = await this.storage.ledger.rechargesSince(
      accountId,
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
    );
    if (month.totalNano + amountNano > ceilingNano) {
      return `${usdString(month.totalNano)} USD recharged this month; ${usdString(amountNano)} more would pass the monthly ceiling of ${usdString(ceilingNano)} USD`;
    }
    return undefined;
  }
}
