import type { FastifyInstance } from 'fastify';
import { seesFullCredits } from '../../auth/index.js';
import { NEGATIVE_BALANCE, hasSavedPaymentMethod, usdNumber, utcDay } from '../../billing/index.js';
import { GatewayError } from '../../errors/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { renderOwnAutoRecharge, renderUsage } from '../render.js';

export function creditRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.get('/v1/credits', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'credits');
    const account = await deps.storage.accounts.get(key.accountId);
    if (!account) throw new GatewayError('invalid_api_key');
    // A refund or a dispute can take the balance below zero; then nothing runs until credit is added.
    const balance = {
      credits: usdNumber(account.balanceNano),
      currency: 'USD',
      ...(account.balanceNano < 0n ? { can_spend: false, reason: NEGATIVE_BALANCE } : {}),
    };
    if (!seesFullCredits(key)) return { object: 'credit_balance', balance };

    const now = new Date();
    const today = utcDay(now.getTime());
    const monthStart = `${today.slice(0, 7)}-01`;
    // Usage is counted per environment: a test key sees its sandbox traffic, a live key the billed traffic.
    const [daily, monthly, liveToday] = await Promise.all([
      deps.storage.usage.totals(account.id, key.environment, today, today),
      deps.storage.usage.totals(account.id, key.environment, monthStart, today),
      deps.storage.usage.totals(account.id, 'live', today, today),
    ]);
    const limits = deps.limitsFor(account);
    const body: Record<string, unknown> = {
      object: 'credit_balance',
      balance,
      usage: { daily: renderUsage(daily), monthly: renderUsage(monthly) },
      limits: {
        rate_limit: { requests_per_minute: limits.requestsPerMinute, tokens_per_minute: limits.tokensPerMinute },
        ...(limits.dailyLimitNano !== null
          ? {
              daily_limit: {
                credits: usdNumber(limits.dailyLimitNano),
                remaining: usdNumber(
                  limits.dailyLimitNano > liveToday.creditsNano ? limits.dailyLimitNano - liveToday.creditsNano : 0n,
                ),
              },
            }
          : {}),
      },
      billing: {
        plan: account.plan,
        auto_recharge: renderOwnAutoRecharge(
          account.settings,
          deps.processors,
          await hasSavedPaymentMethod(deps.storage, account.id),
        ),
        next_billing_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
    };
    return body;
  });
}
