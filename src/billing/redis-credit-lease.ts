/**
 * A replica's lease on one account and key (see redis-credit-state.ts), and the budget arithmetic that decides how
 * much it holds: no I/O here.
 */
import type { Nano } from '../money/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { AccountState } from './accounts.js';
import type { Budgets } from './credit-state.js';
import type { PlanLimits } from './plans.js';

/** A lease holds slack only while every budget has room for this many holds of the request's size. */
const LEASE_MIN_ROOM = 256n;
/** Slack taken with a growing lease, in holds of the request's size; never more than 1/64 of what is free. */
const LEASE_HOLDS = 64n;

const NO_DAILY_LIMIT: PlanLimits = { requestsPerMinute: 0, tokensPerMinute: 0, dailyLimitNano: null };

export interface ConfirmedBalance {
  balanceNano: Nano;
  version: bigint;
}

export interface Lease {
  account: AccountState;
  key: KeyRecord;
  /** The hash field in `cr:{account}:holds`. */
  field: string;
  /** Counted in Redis for this lease. */
  leasedNano: Nano;
  /** Open holds and unwritten charges taken from it. */
  usedNano: Nano;
  limits: PlanLimits;
  /** Slack allowed (far from every limit, for holds of the last request's size) at the last Redis answer. */
  roomy: boolean;
  /** What Redis had free, beyond every lease, at the last answer; unknown after a refused grow. */
  known: Budgets | undefined;
  lastTake: number;
  /**
   * Confirmed debits waiting for one give-back call: charged, applied, the newest confirmed balance, and the key's
   * limit period they were charged in.
   */
  confirming?: {
    period: string;
    chargedNano: Nano;
    appliedNano: Nano;
    balance: ConfirmedBalance;
    done: Promise<void>;
    now(): void;
  };
}

/** An empty lease; without limits (a release or charge before any take) it assumes no daily limit. */
export function newLease(account: AccountState, key: KeyRecord, field: string, limits?: PlanLimits): Lease {
  return {
    account,
    key,
    field,
    limits: limits ?? NO_DAILY_LIMIT,
    leasedNano: 0n,
    usedNano: 0n,
    roomy: false,
    known: undefined,
    lastTake: Date.now(),
  };
}

/** What the lease holds beyond its open holds and unwritten charges. */
export function slackOf(lease: Lease): Nano {
  const slack = lease.leasedNano - lease.usedNano;
  return slack > 0n ? slack : 0n;
}

function budgetValues(budgets: Budgets): Nano[] {
  return [budgets.balanceAvailable, budgets.dailyRemaining, budgets.keyRemaining].filter((b): b is Nano => b !== null);
}

function smallest(budgets: Budgets): Nano {
  return budgetValues(budgets).reduce((a, b) => (b < a ? b : a));
}

/** How far the most exceeded budget is over (0 when every budget fits). */
export function deficitOf(budgets: Budgets): Nano {
  const least = smallest(budgets);
  return least < 0n ? -least : 0n;
}

/** Far from every limit: each budget still has room for LEASE_MIN_ROOM holds of this size. */
export function roomFor(budgets: Budgets, holdNano: Nano): boolean {
  return smallest(budgets) >= LEASE_MIN_ROOM * (holdNano > 0n ? holdNano : 1n);
}

export function slackFor(budgets: Budgets, holdNano: Nano): Nano {
  const byHolds = LEASE_HOLDS * holdNano;
  const byRoom = smallest(budgets) / 64n;
  return byHolds < byRoom ? byHolds : byRoom > 0n ? byRoom : 0n;
}

export function plus(budgets: Budgets, amount: Nano): Budgets {
  return {
    balanceAvailable: budgets.balanceAvailable + amount,
    dailyRemaining: budgets.dailyRemaining === null ? null : budgets.dailyRemaining + amount,
    keyRemaining: budgets.keyRemaining === null ? null : budgets.keyRemaining + amount,
  };
}
