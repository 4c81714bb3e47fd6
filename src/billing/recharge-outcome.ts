/**
 * What follows a card recharge: the credit (exactly once, whether the processor's answer or its later event comes
 * first) or the failure (a `credit.recharge_failed` event, and after RECHARGE_FAILURE_LIMIT failures in a row
 * auto-recharge turns itself off, saying why in the account's settings).
 */
import { durableRows, type EventSink } from '../events/index.js';
import { usdString, type Nano } from '../money/index.js';
import type { AccountRecord, AuditEntry, CommitResult, Storage } from '../storage/index.js';

export const RECHARGE_FAILURE_LIMIT = 3;

/** A charge that took no money. */
export class RechargeFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: { rechargeId?: string; declineCode?: string | null; paymentIntentId?: string | null } = {},
  ) {
    super(message);
    this.name = 'RechargeFailure';
  }
}

/** Whether the account has a payment method saved for off-session charges. */
export async function hasSavedPaymentMethod(storage: Storage, accountId: string): Promise<boolean> {
  return Boolean((await storage.purchases.customer(accountId))?.paymentMethodId);
}

export interface RechargeCredit {
  accountId: string;
  rechargeId: string;
  amountNano: Nano;
  processor: string;
  /** The processor's payment (PaymentIntent id). */
  reference: string;
}

/**
 * The `payment.recharge` audit entry of an auto-recharge's credit: tollgate recharged by the account's settings. The
 * target is the recharge's row where the processor has one (a card), else the account (an invoice line).
 */
export function rechargeAudit(
  credit: Omit<RechargeCredit, 'rechargeId'> & { rechargeId?: string | undefined },
): AuditEntry {
  return {
    accountId: credit.accountId,
    actor: { type: 'system', id: null },
    action: 'payment.recharge',
    target: credit.rechargeId ? { type: 'recharge', id: credit.rechargeId } : { type: 'account', id: credit.accountId },
    after: { amount: usdString(credit.amountNano), processor: credit.processor, payment: credit.reference },
  };
}

/** The ledger `recharge` entry, written only if the recharge was not credited yet (`result.rechargePaid`). */
export async function creditRecharge(storage: Storage, credit: RechargeCredit): Promise<CommitResult> {
  const result = await storage.ledger.commit({
    entries: [
      {
        accountId: credit.accountId,
        kind: 'recharge',
        amountNano: credit.amountNano,
        note: `auto-recharge via ${credit.processor} ${credit.reference}`,
      },
    ],
    audit: [rechargeAudit(credit)],
    rechargePaid: { rechargeId: credit.rechargeId, paymentIntentId: credit.reference, at: Date.now() },
  });
  if (result.rechargePaid) await resetRechargeFailures(storage, credit.accountId);
  return result;
}

async function resetRechargeFailures(storage: Storage, accountId: string): Promise<void> {
  const account = await storage.accounts.get(accountId);
  if (!account?.settings.autoRecharge.failures) return;
  const autoRecharge = { ...account.settings.autoRecharge };
  delete autoRecharge.failures;
  await storage.accounts.update(accountId, { settings: { ...account.settings, autoRecharge } });
}

/**
 * Counts the failure on the account (turning auto-recharge off at the limit) and writes its event for the
 * account's webhooks. Returns the updated account. `beforeEvent` runs between the two, so that whoever hears of
 * the failure finds the account as it now is.
 */
export async function recordRechargeFailure(
  storage: Storage,
  events: EventSink | undefined,
  accountId: string,
  amountNano: Nano,
  failure: RechargeFailure,
  beforeEvent?: (account: AccountRecord | undefined) => Promise<void>,
): Promise<AccountRecord | undefined> {
  const account = await storage.accounts.get(accountId);
  if (!account) return undefined;
  const autoRecharge = { ...account.settings.autoRecharge };
  const failures = (autoRecharge.failures ?? 0) + 1;
  autoRecharge.failures = failures;
  const disable = autoRecharge.enabled && failures >= RECHARGE_FAILURE_LIMIT;
  if (disable) {
    autoRecharge.enabled = false;
    autoRecharge.disabledReason = `Turned off after ${failures} failed recharges in a row; the last: ${failure.message}. Update your payment method, then turn it on again.`;
  }
  const settings = { ...account.settings, autoRecharge };
  const updated = await storage.atomically(async (tx) => {
    const changed = await tx.accounts.update(accountId, { settings });
    if (disable)
      await tx.audit.record({
        accountId,
        actor: { type: 'system', id: null },
        action: 'settings.update',
        target: { type: 'account', id: accountId },
        before: { auto_recharge: { enabled: true } },
        after: { auto_recharge: { enabled: false, disabled_reason: autoRecharge.disabledReason } },
      });
    return changed;
  });
  await beforeEvent?.(updated);
  if (events?.wants('credit.recharge_failed', accountId)) {
    const rows = durableRows(events, {
      type: 'credit.recharge_failed',
      at: Date.now(),
      accountId,
      rechargeId: failure.details.rechargeId ?? null,
      amountNano,
      code: failure.code,
      declineCode: failure.details.declineCode ?? null,
      message: `${usdString(amountNano)} USD not charged: ${failure.message}`,
      paymentIntentId: failure.details.paymentIntentId ?? null,
      consecutiveFailures: failures,
      autoRechargeDisabled: disable,
    });
    if (rows.length) {
      await storage.webhooks.insertDeliveries(rows);
      events.written?.();
    }
  }
  return updated;
}
