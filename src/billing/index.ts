export { AccountCache, available, utcDay, type AccountState } from './accounts.js';
export { admit, secondsUntilUtcMidnight, type Admission, type AdmissionInput } from './admission.js';
export { findCrossings } from './low-balance.js';
export { planLimits } from './plans.js';
export { NANO_PER_USD, parseUsd, usdNumber, usdString, type Nano } from '../money/index.js';
export { affordableCompletionTokens, costOf, type Price } from './pricing.js';
export { invoiceProcessor, type PaymentProcessor } from './recharge.js';
export { Reservation, Wallet, type PlanLimits, type Settlement, type WalletOptions } from './wallet.js';
