/** Prices and usage: the sheet in force, usage read kind by kind from each provider's report, cost and hold rates. */
export { PriceRules, type Fees, type PriceSheet, type Tier, type TierSheet, type TokenRates } from './sheet.js';
export {
  anthropicUsage,
  chatUsage,
  completionTokensOf,
  countedUsage,
  promptTokensOf,
  reportedCount,
  responsesUsage,
  type OwnCount,
  type TokenUsage,
} from './usage.js';
export {
  billingRecord,
  capUsage,
  holdRates,
  priceUsage,
  serviceSheet,
  type HoldRates,
  type HoldShape,
  type Priced,
} from './cost.js';
