import type { Config } from '../config/index.js';
import type { AccountSettings } from '../storage/index.js';
import { parseUsd, type Nano } from '../money/index.js';

export interface PlanLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
  dailyLimitNano: Nano | null;
}

/** An account's limits: its plan's (from configuration), with the account's own overrides on top. */
export function planLimits(config: Config): (account: { plan: string; settings: AccountSettings }) => PlanLimits {
  const plans = new Map(
    Object.entries(config.plans).map(([name, plan]) => [
      name,
      {
        requestsPerMinute: plan.requests_per_minute,
        tokensPerMinute: plan.tokens_per_minute,
        dailyLimitNano: plan.daily_limit == null ? null : parseUsd(plan.daily_limit),
      },
    ]),
  );
  const fallback = plans.get(config.default_plan)!;
  return ({ plan, settings }) => {
    const base = plans.get(plan) ?? fallback;
    return {
      requestsPerMinute: settings.requestsPerMinute ?? base.requestsPerMinute,
      tokensPerMinute: settings.tokensPerMinute ?? base.tokensPerMinute,
      dailyLimitNano: settings.dailyLimitNano !== undefined ? settings.dailyLimitNano : base.dailyLimitNano,
    };
  };
}
