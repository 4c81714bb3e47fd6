/**
 * Where holds and not-yet-written charges live. One process keeps them in memory (`MemoryCreditState`);
 * replicas share them in Redis (`RedisCreditState`), so no replica can spend what another holds.
 */
import type { KeyRecord } from '../storage/index.js';
import type { Nano } from '../money/index.js';
import { available, type AccountState } from './accounts.js';
import { keyPeriodSpend } from './key-spend.js';
import type { PlanLimits } from './plans.js';

export interface Hold {
  requestId: string;
  account: AccountState;
  key: KeyRecord;
  amountNano: Nano;
  /** When it was charged (set by `charge`): the key's limit period its spend counts in, as its usage row's day. */
  chargedAt?: number;
}

export interface Budgets {
  /** What the balance can still pay (balance minus holds and unwritten charges). */
  balanceAvailable: Nano;
  /** Left under the daily limit; null when there is none. */
  dailyRemaining: Nano | null;
  /** Left under the key's spend limit; null when there is none. */
  keyRemaining: Nano | null;
}

export interface CreditState {
  budgets(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets>;
  /**
   * The budgets as they would be without any hold in flight (unwritten charges still count): whether a refused
   * request would pass once other requests' holds end. Where holds are shared (Redis), every lease counts as held.
   */
  budgetsWithoutHolds(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets>;
  /** Set where holds also end out of this process's sight (another replica's): how often a waiter looks again. */
  readonly pollMs?: number;
  /** Takes the hold when it still fits every budget; false when concurrent requests took the room first. */
  take(hold: Hold, limits: PlanLimits): Promise<boolean>;
  release(hold: Hold): Promise<void>;
  /**
   * Ends the hold and records an unwritten charge: `actual` in full up to the hold, and beyond it only what
   * every budget (balance, daily limit, key spend limit) still has free.
   */
  charge(hold: Hold, actualNano: Nano, limits: PlanLimits): Promise<Nano>;
  /** The database wrote the charge (`applied` is lower when it clamped at zero) and confirmed a balance. */
  confirmed(
    hold: Hold,
    chargedNano: Nano,
    appliedNano: Nano,
    balance: { balanceNano: Nano; version: bigint },
  ): Promise<void>;
  start?(): void;
  close?(): Promise<void>;
}

/**
 * The charge for an actual cost: in full up to the request's own hold (that money was set aside for it), and
 * beyond the hold only what is free, so an estimate that was too low never takes what other requests hold nor
 * passes a limit.
 */
export function capCharge(actualNano: Nano, holdNano: Nano, freeNano: Nano): Nano {
  const ceiling = freeNano > holdNano ? freeNano : holdNano;
  return actualNano < ceiling ? actualNano : ceiling;
}

export class MemoryCreditState implements CreditState {
  budgets(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    return Promise.resolve(this.budgetsNow(account, key, limits));
  }

  budgetsWithoutHolds(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    const budgets = this.budgetsNow(account, key, limits);
    const held = keySpendOf(account, key).reservedNano;
    return Promise.resolve({
      balanceAvailable: budgets.balanceAvailable + account.reservedNano,
      dailyRemaining: budgets.dailyRemaining === null ? null : budgets.dailyRemaining + account.dailyReservedNano,
      keyRemaining: budgets.keyRemaining === null ? null : budgets.keyRemaining + held,
    });
  }

  /** Check and hold in one synchronous step: an `await` between them would let concurrent takes both pass. */
  take(hold: Hold, limits: PlanLimits): Promise<boolean> {
    const budgets = this.budgetsNow(hold.account, hold.key, limits);
    const fits = (left: Nano | null) => left === null || left >= hold.amountNano;
    if (!fits(budgets.balanceAvailable) || !fits(budgets.dailyRemaining) || !fits(budgets.keyRemaining))
      return Promise.resolve(false);
    this.move(hold, hold.amountNano);
    return Promise.resolve(true);
  }

  private budgetsNow(account: AccountState, key: KeyRecord, limits: PlanLimits): Budgets {
    const keyState = keySpendOf(account, key);
    return {
      balanceAvailable: available(account),
      dailyRemaining:
        limits.dailyLimitNano === null
          ? null
          : limits.dailyLimitNano - account.dailySpentNano - account.dailyReservedNano,
      keyRemaining:
        key.spendLimitNano === null ? null : key.spendLimitNano - keyState.spentNano - keyState.reservedNano,
    };
  }

  release(hold: Hold): Promise<void> {
    this.move(hold, -hold.amountNano);
    return Promise.resolve();
  }

  charge(hold: Hold, actualNano: Nano, limits: PlanLimits): Promise<Nano> {
    this.move(hold, -hold.amountNano);
    const { account } = hold;
    const charge = capCharge(actualNano, hold.amountNano, leastFree(this.budgetsNow(account, hold.key, limits)));
    account.pendingNano += charge;
    account.dailySpentNano += charge;
    keySpendOf(account, hold.key).spentNano += charge;
    return Promise.resolve(charge);
  }

  confirmed(hold: Hold, chargedNano: Nano, appliedNano: Nano): Promise<void> {
    const { account } = hold;
    account.pendingNano -= chargedNano;
    // The database clamped the debit: give back what the memory view counted beyond it.
    const unapplied = chargedNano + appliedNano;
    account.dailySpentNano -= unapplied;
    keySpendOf(account, hold.key).spentNano -= unapplied;
    return Promise.resolve();
  }

  private move(hold: Hold, amount: Nano): void {
    hold.account.reservedNano += amount;
    hold.account.dailyReservedNano += amount;
    keySpendOf(hold.account, hold.key).reservedNano += amount;
  }
}

/** What the tightest budget has free (never negative). */
export function leastFree(budgets: Budgets): Nano {
  let least = budgets.balanceAvailable;
  for (const budget of [budgets.dailyRemaining, budgets.keyRemaining])
    if (budget !== null && budget < least) least = budget;
  return least > 0n ? least : 0n;
}

/**
 * The key's spend in its limit's current period, and its holds: a new period starts at the database's figure for it
 * (0 until a lookup in that period saw more). Holds taken in the last period still count until they end.
 */
function keySpendOf(account: AccountState, key: KeyRecord): { spentNano: Nano; reservedNano: Nano } {
  const now = keyPeriodSpend(key);
  let state = account.keySpend.get(key.id);
  if (!state) {
    state = { ...now, reservedNano: 0n };
    account.keySpend.set(key.id, state);
  } else if (state.period !== now.period) {
    state.period = now.period;
    state.spentNano = now.spentNano;
  }
  return state;
}
