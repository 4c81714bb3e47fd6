export { AccountCache, available, utcDay, type AccountState } from './accounts.js';
export {
  admit,
  completionBound,
  NEGATIVE_BALANCE,
  secondsUntilUtcMidnight,
  type Admission,
  type AdmissionInput,
} from './admission.js';
export { MemoryCreditState, capCharge, type Budgets, type CreditState, type Hold } from './credit-state.js';
export { RedisCreditState, type RedisCreditStateOptions } from './redis-credit-state.js';
export { findCrossings } from './low-balance.js';
export { planLimits, type PlanLimits } from './plans.js';
export { NANO_PER_USD, parseUsd, usdNumber, usdString, type Nano } from '../money/index.js';
export { affordableCompletionTokens, costOf, type Price } from './pricing.js';
export {
  invoiceProcessor,
  paymentProcessors,
  rechargeLimits,
  rechargeProcessor,
  selfServeProcessor,
  selfServeRecharge,
  type ChargeResult,
  type PaymentProcessor,
  type PaymentProcessors,
  type RechargeLimits,
  type RechargeOptions,
} from './recharge.js';
export {
  RECHARGE_FAILURE_LIMIT,
  RechargeFailure,
  creditRecharge,
  hasSavedPaymentMethod,
  recordRechargeFailure,
  type RechargeCredit,
} from './recharge-outcome.js';
export { Reservation, Wallet, type ReserveRequest, type Settlement, type WalletOptions } from './wallet.js';
export { detailJson, type RequestDetail, type StoredDetail } from './request-detail.js';
