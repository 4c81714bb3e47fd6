/** What the Credits & usage page shows, read from the stores of `GET /v1/credits`. */
import {
  hasSavedPaymentMethod,
  parseUsd,
  usdNumber,
  utcDay,
  type PaymentProcessors,
  type PlanLimits,
} from '../billing/index.js';
import type { Config } from '../config/index.js';
import { renderOwnAutoRecharge, renderUsage } from '../http/render.js';
import type { AccountRecord, Environment, Storage } from '../storage/index.js';

const DAY_MS = 86_400_000;

export async function overview(
  storage: Storage,
  config: Config,
  processors: PaymentProcessors,
  account: AccountRecord,
  limits: PlanLimits,
  environment: Environment,
) {
  const now = new Date();
  const today = utcDay(now.getTime());
  const monthStart = `${today.slice(0, 7)}-01`;
  const [daily, monthly, liveToday] = await Promise.all([
    storage.usage.totals(account.id, environment, today, today),
    storage.usage.totals(account.id, environment, monthStart, today),
    storage.usage.totals(account.id, 'live', today, today),
  ]);
  const { settings } = account;
  const thresholds = settings.lowBalanceThresholdsNano ?? config.credits.low_balance_thresholds.map((t) => parseUsd(t));
  return {
    email: account.email,
    environment,
    balance: { credits: usdNumber(account.balanceNano), currency: 'USD' },
    usage: { daily: renderUsage(daily), monthly: renderUsage(monthly) },
    limits: {
      rate_limit: { requests_per_minute: limits.requestsPerMinute, tokens_per_minute: limits.tokensPerMinute },
      daily_limit:
        limits.dailyLimitNano === null
          ? null
          : {
              credits: usdNumber(limits.dailyLimitNano),
              remaining: usdNumber(
                limits.dailyLimitNano > liveToday.creditsNano ? limits.dailyLimitNano - liveToday.creditsNano : 0n,
              ),
            },
    },
    billing: {
      plan: account.plan,
      next_billing_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      auto_recharge: renderOwnAutoRecharge(settings, processors, await hasSavedPaymentMethod(storage, account.id)),
    },
    low_balance_thresholds: thresholds.map(usdNumber),
  };
}

/** Every day of the last `days` (zeros included, for the chart) and the per-model totals over them. */
export async function usageHistory(storage: Storage, accountId: string, environment: Environment, days: number) {
  const now = Date.now();
  const from = utcDay(now - (days - 1) * DAY_MS);
  const rows = await storage.usage.daily(accountId, environment, from, utcDay(now));
  const byDay = new Map<string, { requests: number; prompt: number; completion: number; nano: bigint }>();
  const byModel = new Map<string, { requests: number; prompt: number; completion: number; nano: bigint }>();
  const add = (map: typeof byDay, key: string, row: (typeof rows)[number]) => {
    const slot = map.get(key) ?? { requests: 0, prompt: 0, completion: 0, nano: 0n };
    slot.requests += row.requests;
    slot.prompt += row.promptTokens;
    slot.completion += row.completionTokens;
    slot.nano += row.creditsNano;
    map.set(key, slot);
  };
  for (const row of rows) {
    add(byDay, row.day, row);
    add(byModel, row.model, row);
  }
  const render = (slot: { requests: number; prompt: number; completion: number; nano: bigint } | undefined) => ({
    credits: usdNumber(slot?.nano ?? 0n),
    requests: slot?.requests ?? 0,
    prompt_tokens: slot?.prompt ?? 0,
    completion_tokens: slot?.completion ?? 0,
  });
  const series = [];
  for (let i = days - 1; i >= 0; i--) {
    const day = utcDay(now - i * DAY_MS);
    series.push({ day, ...render(byDay.get(day)) });
  }
  const models = [...byModel.entries()]
    .map(([model, slot]) => ({ model, ...render(slot) }))
    .sort((a, b) => b.credits - a.credits || b.requests - a.requests || a.model.localeCompare(b.model));
  return { environment, days: series, models };
}
