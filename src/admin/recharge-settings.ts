/**
 * Auto-recharge and how it is paid. An operator may put an account on `invoice` billing (with a monthly ceiling)
 * and set its auto-recharge; an account's own user may only turn auto-recharge off, unless they saved a payment
 * method (a card, charged by the self-serve processor). So no user action can add unpaid credit.
 */
import { selfServeRecharge, usdString, type PaymentProcessors, type RechargeLimits } from '../billing/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { AccountSettings } from '../storage/index.js';
import type { AutoRechargePatch, BillingPatch } from './schemas.js';
import { centsUsd, usd } from './usd.js';

/** The operator's change to how auto-recharges are paid. */
export function applyBilling(settings: AccountSettings, patch: BillingPatch, processors: PaymentProcessors): void {
  if (patch === null) {
    delete settings.billing;
    settings.autoRecharge.enabled = false;
    return;
  }
  const id = patch.processor ?? settings.billing?.processor;
  const processor = id === undefined ? undefined : processors.get(id);
  if (!processor || processor.selfServe) {
    const assignable = [...processors.values()].filter((p) => !p.selfServe).map((p) => p.id);
    throw invalidRequest(`billing.processor must be one of: ${assignable.join(', ')}`, 'billing.processor');
  }
  const ceiling =
    patch.monthly_ceiling !== undefined
      ? usd(patch.monthly_ceiling, 'billing.monthly_ceiling')
      : settings.billing?.monthlyCeilingNano;
  if (ceiling == null)
    throw invalidRequest(`billing.monthly_ceiling is required for ${processor.id} billing`, 'billing.monthly_ceiling');
  settings.billing = { processor: processor.id, monthlyCeilingNano: ceiling };
}

/** The operator's change to auto-recharge: it needs a processor on the account and stays within the limits. */
export function applyAutoRecharge(settings: AccountSettings, patch: AutoRechargePatch, limits: RechargeLimits): void {
  const { enabled, threshold, amount } = patch;
  const autoRecharge = settings.autoRecharge;
  if (enabled !== undefined) {
    if (typeof enabled !== 'boolean')
      throw invalidRequest('auto_recharge.enabled must be a boolean', 'auto_recharge.enabled');
    autoRecharge.enabled = enabled;
    // Turned on again: the count of failed recharges starts over.
    if (enabled) {
      delete autoRecharge.failures;
      delete autoRecharge.disabledReason;
    }
  }
  if (threshold !== undefined) autoRecharge.thresholdNano = usd(threshold, 'auto_recharge.threshold');
  // What each recharge charges: whole cents, so the credit is exactly what was charged.
  if (amount !== undefined) autoRecharge.amountNano = centsUsd(amount, 'auto_recharge.amount');
  if ((amount !== undefined || autoRecharge.enabled) && autoRecharge.amountNano > limits.maxAmountNano) {
    throw invalidRequest(
      `auto_recharge.amount must be at most ${usdString(limits.maxAmountNano)} USD (credits.auto_recharge.max_amount)`,
      'auto_recharge.amount',
    );
  }
  if (!autoRecharge.enabled) return;
  if (autoRecharge.amountNano <= 0n)
    throw invalidRequest('auto_recharge.amount must be positive when auto-recharge is enabled', 'auto_recharge.amount');
  if (!settings.billing) {
    throw invalidRequest(
      'auto_recharge.enabled needs a payment processor on the account: set billing.processor first',
      'auto_recharge.enabled',
    );
  }
}

/**
 * An account's own user (dashboard): turning auto-recharge off is always allowed, anything else only with a
 * saved payment method (400 `payment_method_required` without one) and not on operator billing.
 */
export function checkOwnAutoRecharge(
  settings: AccountSettings,
  patch: AutoRechargePatch | undefined,
  processors: PaymentProcessors,
  savedPaymentMethod: boolean,
): void {
  if (!patch || (patch.enabled === false && patch.threshold === undefined && patch.amount === undefined)) return;
  const { available, reason, code } = selfServeRecharge(settings, processors, savedPaymentMethod);
  if (available) return;
  const field = patch.enabled !== undefined ? 'enabled' : patch.threshold !== undefined ? 'threshold' : 'amount';
  const message = reason ?? 'Auto-recharge is not available for this account';
  if (code) throw new GatewayError(code, { message, param: `auto_recharge.${field}` });
  throw invalidRequest(message, `auto_recharge.${field}`);
}
