/**
 * Credit held by every replica, shared in Redis, exact to the nano-USD: no replica can spend what another holds.
 *
 * Each replica holds one **lease** per account and key: an amount counted in Redis against the balance, the daily
 * limit and the key's spend limit. Holds and charges are taken from the lease in this process; only the lease's
 * size changes in Redis (redis-credit-client.ts, with the scripts of redis-credit-scripts.ts). How much a lease
 * holds is decided in redis-credit-lease.ts.
 * - Near a limit (what is free is under LEASE_MIN_ROOM holds) a lease holds exactly this replica's open holds and
 *   unwritten charges: every hold, release and charge is a Redis call, exactly like per-request holds.
 * - Far from every limit a lease grows by up to LEASE_HOLDS holds beyond what the request needs (at most 1/64 of
 *   what is free), so most requests need no Redis call at all; the slack goes back after LEASE_IDLE_MS unused.
 * - A charge stays in the lease until its debit is durable; then one call per lease (per commit near a limit, every
 *   CONFIRM_BATCH_MS far from them) moves it from the lease to the day's and the key's spend and records the
 *   balance the commit confirmed.
 *
 * A replica that dies leaves its leases behind: every replica refreshes a liveness key, and a sweeper on every
 * replica releases the leases of replicas whose key expired (HOLD_OWNER_TTL_MS), taking the balance and the spend
 * from the database, which has every debit the dead replica committed.
 */
import type { Nano } from '../money/index.js';
import { periodOf, type KeyRecord, type Storage } from '../storage/index.js';
import type { AccountState } from './accounts.js';
import type { Budgets, CreditState, Hold } from './credit-state.js';
import type { PlanLimits } from './plans.js';
import { RedisCreditClient, unavailable } from './redis-credit-client.js';
import {
  deficitOf,
  newLease,
  plus,
  roomFor,
  slackFor,
  slackOf,
  type ConfirmedBalance,
  type Lease,
} from './redis-credit-lease.js';

const HOLD_OWNER_TTL_MS = 5_000;
const HEARTBEAT_MS = 1_000;
const SWEEP_MS = 2_000;
const LEASE_IDLE_MS = 1_000;
/** A roomy lease confirms its durable charges to Redis at most this often. */
const CONFIRM_BATCH_MS = 50;
/** Another replica's hold ends out of sight: a reservation waiting for holds looks again this often. */
const WAITER_POLL_MS = 100;

export interface RedisCreditStateOptions {
  url: string;
  prefix: string;
  storage: Storage;
  /** How long a replica's leases outlive its last heartbeat (default 5 s). */
  ownerTtlMs?: number;
  onError?: (error: unknown) => void;
}

export class RedisCreditState implements CreditState {
  readonly pollMs = WAITER_POLL_MS;
  private readonly client: RedisCreditClient;
  /** Each key's lease, by key id. */
  private readonly leases = new Map<string, Lease>();
  private timers: NodeJS.Timeout[] = [];
  /** Give-backs that failed after the response: retried by the sweep timer, never dropped. */
  private retries: Array<() => Promise<unknown>> = [];

  constructor(private readonly options: RedisCreditStateOptions) {
    this.client = new RedisCreditClient(options.url, options.prefix);
  }

  start(): void {
    const beat = () =>
      this.client.heartbeat(this.options.ownerTtlMs ?? HOLD_OWNER_TTL_MS).catch((e) => this.options.onError?.(e));
    void beat();
    const sweep = async () => {
      await this.retryFailed();
      await this.returnIdleSlack();
      await this.sweep();
    };
    this.timers.push(
      setInterval(() => void beat(), HEARTBEAT_MS),
      setInterval(() => void sweep().catch((e) => this.options.onError?.(e)), SWEEP_MS),
    );
    for (const timer of this.timers) timer.unref();
  }

  /** Gives back the slack of every lease (what open holds do not use), then disconnects. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    const confirming = [...this.leases.values()].flatMap((lease) => (lease.confirming ? [lease.confirming] : []));
    for (const pending of confirming) pending.now();
    await Promise.all(confirming.map((pending) => pending.done));
    await this.returnIdleSlack(0).catch(() => undefined);
    await this.client.quit().catch(() => undefined);
  }

  async budgets(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    const lease = this.leaseFor(account, key, limits);
    const known = lease.roomy && lease.known ? lease.known : await this.grow(lease, 0n);
    return plus(known, slackOf(lease));
  }

  /** Every replica's leases left out: open holds, their slack and charges not yet confirmed. */
  budgetsWithoutHolds(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    return this.client.grow(this.leaseFor(account, key, limits), 0n, true);
  }

  async take(hold: Hold, limits: PlanLimits): Promise<boolean> {
    const lease = this.leaseFor(hold.account, hold.key, limits);
    lease.lastTake = Date.now();
    if (slackOf(lease) >= hold.amountNano) {
      lease.usedNano += hold.amountNano;
      return true;
    }
    const needed = hold.amountNano - slackOf(lease);
    const extra = lease.roomy && lease.known ? slackFor(lease.known, hold.amountNano) : 0n;
    const known = await this.grow(lease, needed + extra);
    const deficit = deficitOf(known);
    lease.roomy = deficit === 0n && roomFor(known, hold.amountNano);
    // Near a limit, charges waiting to be confirmed leave the lease at once instead of still counting in it.
    if (!lease.roomy) lease.confirming?.now();
    if (deficit <= extra) {
      lease.usedNano += hold.amountNano;
      if (deficit > 0n) await this.giveBack(lease, deficit, 0n);
      return true;
    }
    // Concurrent requests took the room: give back what this grow added, and plan again from fresh budgets.
    await this.giveBack(lease, needed + extra, 0n);
    return false;
  }

  async release(hold: Hold): Promise<void> {
    const lease = this.leaseFor(hold.account, hold.key);
    lease.usedNano -= hold.amountNano;
    await this.trim(lease);
  }

  /** Within its own hold a request is charged in full; beyond it, only what every budget has free. */
  async charge(hold: Hold, actualNano: Nano): Promise<Nano> {
    const lease = this.leaseFor(hold.account, hold.key);
    hold.chargedAt = Date.now();
    const beyond = actualNano - hold.amountNano - slackOf(lease);
    lease.usedNano -= hold.amountNano;
    let charge = actualNano;
    try {
      if (beyond > 0n) {
        // The answer includes the grow: keep only what the balance, the daily limit and the key's limit could pay.
        const short = deficitOf(await this.grow(lease, beyond));
        if (short > 0n) {
          const back = short < beyond ? short : beyond;
          await this.giveBack(lease, back, 0n);
          charge -= back;
        }
      }
    } catch (error) {
      await this.trim(lease);
      throw unavailable(error);
    }
    lease.usedNano += charge;
    await this.trim(lease);
    return charge;
  }

  /** The debit is durable: batched with the other debits confirmed in the same tick, one call per lease. */
  async confirmed(hold: Hold, chargedNano: Nano, appliedNano: Nano, balance: ConfirmedBalance): Promise<void> {
    const lease = this.leaseFor(hold.account, hold.key);
    const spent = -appliedNano;
    const period = periodOf(hold.key.limitReset, hold.chargedAt ?? Date.now());
    let batch = lease.confirming;
    if (batch && batch.period !== period) {
      // Charged in another limit period than the batch (a period just ended): its own call, each spend in its period.
      lease.usedNano -= chargedNano;
      lease.leasedNano -= spent;
      await this.orRetry(() => this.giveBackCall(lease, spent, spent, balance, period));
      return this.trim(lease);
    }
    if (!batch) {
      // Far from every limit the charges may sit in the lease a little longer (they still count against the
      // budgets there): one call per lease every CONFIRM_BATCH_MS instead of one per commit. Near a limit, at once.
      let due = (): void => undefined;
      const start = new Promise<void>((resolve) => (due = resolve));
      const timer = lease.roomy ? setTimeout(due, CONFIRM_BATCH_MS) : undefined;
      if (!timer) setImmediate(due);
      const now = () => {
        clearTimeout(timer);
        due();
      };
      const pending = { period, chargedNano: 0n, appliedNano: 0n, balance, done: Promise.resolve(), now };
      pending.done = start.then(async () => {
        lease.confirming = undefined;
        lease.usedNano -= pending.chargedNano;
        lease.leasedNano -= pending.appliedNano;
        const slack = lease.roomy ? 0n : slackOf(lease);
        lease.leasedNano -= slack;
        await this.orRetry(() =>
          this.giveBackCall(lease, pending.appliedNano + slack, pending.appliedNano, pending.balance, pending.period),
        );
      });
      lease.confirming = batch = pending;
    }
    batch.chargedNano += chargedNano;
    batch.appliedNano += spent;
    if (balance.version > batch.balance.version) batch.balance = balance;
    return batch.done;
  }

  /** Resolves the leases of replicas that stopped refreshing their liveness key; returns how many. */
  async sweep(): Promise<number> {
    return this.client.sweep(this.options.storage);
  }

  private leaseFor(account: AccountState, key: KeyRecord, limits?: PlanLimits): Lease {
    // By key id alone (a key belongs to one account): no string built on every call.
    let lease = this.leases.get(key.id);
    if (!lease) {
      lease = newLease(account, key, this.client.leaseField(key.id), limits);
      this.leases.set(key.id, lease);
    }
    lease.account = account;
    lease.key = key;
    if (limits) lease.limits = limits;
    return lease;
  }

  /** Adds `amount` to the lease in Redis; returns what is free beyond every lease (negative when over). */
  private async grow(lease: Lease, amount: Nano): Promise<Budgets> {
    const known = await this.client.grow(lease, amount);
    lease.leasedNano += amount;
    lease.known = deficitOf(known) === 0n ? known : undefined;
    return known;
  }

  /** Near a limit a lease holds no slack: what its holds do not use goes straight back. */
  private async trim(lease: Lease): Promise<void> {
    if (lease.roomy || lease.confirming) return;
    const slack = slackOf(lease);
    if (slack > 0n) await this.giveBack(lease, slack, 0n);
  }

  private async giveBack(lease: Lease, amount: Nano, spent: Nano): Promise<void> {
    if (amount <= 0n && spent <= 0n) return;
    lease.leasedNano -= amount;
    await this.orRetry(() => this.giveBackCall(lease, amount, spent));
  }

  private async giveBackCall(
    lease: Lease,
    amount: Nano,
    spent: Nano,
    balance?: ConfirmedBalance,
    period?: string,
  ): Promise<void> {
    if (amount <= 0n && spent <= 0n && !balance) return;
    // A sweeper took this replica for dead and released the whole lease: what is left of it is gone too.
    if (!(await this.client.giveBack(lease, amount, spent, balance, period))) lease.leasedNano = 0n;
  }

  /** Gives back the slack of leases unused for `idleMs`, and forgets empty ones. */
  private async returnIdleSlack(idleMs = LEASE_IDLE_MS): Promise<void> {
    const now = Date.now();
    for (const [id, lease] of this.leases) {
      if (lease.confirming || now - lease.lastTake < idleMs) continue;
      const slack = slackOf(lease);
      if (slack > 0n) await this.giveBack(lease, slack, 0n);
      if (lease.leasedNano === 0n && lease.usedNano === 0n) this.leases.delete(id);
    }
  }

  private async orRetry(command: () => Promise<unknown>): Promise<void> {
    try {
      await command();
    } catch (error) {
      this.options.onError?.(error);
      this.retries.push(command);
    }
  }

  private async retryFailed(): Promise<void> {
    const due = this.retries;
    this.retries = [];
    for (const command of due) await this.orRetry(command);
  }
}
