export { AccountCache, available, utcDay, type AccountState } from './accounts.js';
export { admit, secondsUntilUtcMidnight, type Admission, type AdmissionInput } from './admission.js';
export { MemoryCreditState, type Budgets, type CreditState, type Hold } from './credit-state.js';
export { findCrossings } from './low-balance.js';
export { planLimits, type PlanLimits } from './plans.js';
export { NANO_PER_USD, parseUsd, usdNumber, usdString, type Nano } from '../money/index.js';
export { affordableCompletionTokens, costOf, type Price } from './pricing.js';
export { invoiceProcessor, type PaymentProcessor } from './recharge.js';
export { Reservation, Wallet, type Settlement, type WalletOptions } from './wallet.js';
