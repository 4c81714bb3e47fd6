/**
 * Credit held by every replica, shared in Redis, exact to the nano-USD: no replica can spend what another holds.
 *
 * Each replica holds one **lease** per account and key: an amount counted in Redis against the balance, the daily
 * limit and the key's spend limit. Holds and charges are taken from the lease in this process; only the lease's
 * size changes in Redis (scripts in redis-credit-scripts.ts).
 * - Near a limit (what is free is under LEASE_MIN_ROOM holds) a lease holds exactly this replica's open holds and
 *   unwritten charges: every hold, release and charge is a Redis call, as precise as per-request holds.
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
import { Redis, type Result } from 'ioredis';
import { GatewayError } from '../errors/index.js';
import type { Nano } from '../money/index.js';
import { SpanKind, tracingEnabled, withSpan } from '../observability/index.js';
import { newId, type KeyRecord, type Storage } from '../storage/index.js';
import { utcDay, type AccountState } from './accounts.js';
import type { Budgets, CreditState, Hold } from './credit-state.js';
import type { PlanLimits } from './plans.js';
import { GIVE_BACK, GROW, SWEEP } from './redis-credit-scripts.js';

const HOLD_OWNER_TTL_MS = 5_000;
const HEARTBEAT_MS = 1_000;
const SWEEP_MS = 2_000;
/** A lease holds slack only while every budget has room for this many holds of the request's size. */
const LEASE_MIN_ROOM = 256n;
/** Slack taken with a growing lease, in holds of the request's size; never more than 1/64 of what is free. */
const LEASE_HOLDS = 64n;
const LEASE_IDLE_MS = 1_000;
/** A roomy lease confirms its durable charges to Redis at most this often. */
const CONFIRM_BATCH_MS = 50;

const SCRIPTS = {
  tollgateCreditGrow: [GROW, 3],
  tollgateCreditGiveBack: [GIVE_BACK, 3],
  tollgateCreditSweep: [SWEEP, 3],
} as const;
type ScriptName = keyof typeof SCRIPTS;
/** GROW's reply: the account's `bal, res, dspent, dres` and the key's `spent, res`, each a string or null (unset). */
type Fields = [Array<string | null>, Array<string | null>];

declare module 'ioredis' {
  /** The SCRIPTS, defined on the credit state's connection by its constructor; each takes three keys. */
  interface RedisCommander<Context> {
    tollgateCreditGrow(...keysAndArgs: string[]): Result<unknown, Context>;
    tollgateCreditGiveBack(...keysAndArgs: string[]): Result<unknown, Context>;
    tollgateCreditSweep(...keysAndArgs: string[]): Result<unknown, Context>;
  }
}

interface Lease {
  account: AccountState;
  key: KeyRecord;
  /** The hash field in `cr:{account}:holds`. */
  field: string;
  /** Counted in Redis for this lease. */
  leasedNano: Nano;
  /** Open holds and unwritten charges taken from it. */
  usedNano: Nano;
  limits: PlanLimits;
  /** Slack allowed (far from every limit, for holds of the last request's size) as of the last Redis answer. */
  roomy: boolean;
  /** What Redis had free, beyond every lease, at the last answer; unknown after a refused grow. */
  known: Budgets | undefined;
  lastTake: number;
  /** Confirmed debits waiting for one give-back call: charged, applied, and the newest confirmed balance. */
  confirming?: {
    chargedNano: Nano;
    appliedNano: Nano;
    balance: { balanceNano: Nano; version: bigint };
    done: Promise<void>;
    now(): void;
  };
}

export interface RedisCreditStateOptions {
  url: string;
  prefix: string;
  storage: Storage;
  /** How long a replica's leases outlive its last heartbeat (default 5 s). */
  ownerTtlMs?: number;
  onError?: (error: unknown) => void;
}

export class RedisCreditState implements CreditState {
  private readonly redis: Redis;
  private readonly replicaId = newId('replica');
  /** Each key's lease, by key id. */
  private readonly leases = new Map<string, Lease>();
  private timers: NodeJS.Timeout[] = [];
  /** Give-backs that failed after the response: retried by the sweep timer, never dropped. */
  private retries: Array<() => Promise<unknown>> = [];

  constructor(private readonly options: RedisCreditStateOptions) {
    // Unlike rate limits, money does not fail open: a request waits briefly for Redis and then gets a 503.
    // Auto-pipelining: the commands of concurrent requests issued in one tick share one write.
    this.redis = new Redis(options.url, { maxRetriesPerRequest: 2, commandTimeout: 2_000, enableAutoPipelining: true });
    this.redis.on('error', () => undefined);
    for (const [name, [lua, keys]] of Object.entries(SCRIPTS))
      this.redis.defineCommand(name, { lua, numberOfKeys: keys });
  }

  start(): void {
    const beat = () =>
      this.redis
        .set(this.ownerKey(this.replicaId), '1', 'PX', this.options.ownerTtlMs ?? HOLD_OWNER_TTL_MS)
        .catch((e) => this.options.onError?.(e));
    void beat();
    const sweep = async () => {
      await this.retryFailed();
      await this.returnIdleSlack();
      await this.sweep();
    };
    this.timers.push(
      setInterval(beat, HEARTBEAT_MS),
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
    await this.redis.quit().catch(() => undefined);
  }

  async budgets(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    const lease = this.leaseFor(account, key, limits);
    const known = lease.roomy && lease.known ? lease.known : await this.grow(lease, 0n);
    return plus(known, slackOf(lease));
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
    // Near a limit, charges waiting to be confirmed must not keep counting as leased.
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
  async confirmed(
    hold: Hold,
    chargedNano: Nano,
    appliedNano: Nano,
    balance: { balanceNano: Nano; version: bigint },
  ): Promise<void> {
    const lease = this.leaseFor(hold.account, hold.key);
    const spent = -appliedNano;
    let batch = lease.confirming;
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
      const pending = { chargedNano: 0n, appliedNano: 0n, balance, done: Promise.resolve(), now };
      pending.done = start.then(async () => {
        lease.confirming = undefined;
        lease.usedNano -= pending.chargedNano;
        lease.leasedNano -= pending.appliedNano;
        const slack = lease.roomy ? 0n : slackOf(lease);
        lease.leasedNano -= slack;
        await this.orRetry(() =>
          this.giveBackCall(lease, pending.appliedNano + slack, pending.appliedNano, pending.balance),
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
    let resolved = 0;
    const alive = new Map<string, boolean>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.options.prefix}cr:{*}:holds`, 'COUNT', 200);
      cursor = next;
      for (const holdsKey of keys) {
        const accountId = holdsKey.slice(holdsKey.indexOf('{') + 1, holdsKey.lastIndexOf('}'));
        for (const [field, amount] of Object.entries(await this.redis.hgetall(holdsKey))) {
          const [owner = '', keyId] = field.split('|');
          if (keyId === undefined || !/^\d+$/.test(amount)) continue;
          if (!alive.has(owner)) alive.set(owner, (await this.redis.exists(this.ownerKey(owner))) === 1);
          if (alive.get(owner)) continue;
          const { storage } = this.options;
          const day = utcDay();
          const [account, key, today] = await Promise.all([
            storage.accounts.get(accountId),
            storage.keys.get(keyId),
            storage.usage.totals(accountId, 'live', day, day),
          ]);
          const balance = account ? [account.balanceNano, account.version] : [0n, 0n];
          const args = [
            field,
            keyId,
            amount,
            ...balance.map(String),
            day,
            today.creditsNano.toString(),
            (key?.spentNano ?? 0n).toString(),
          ];
          resolved += Number(await this.script('tollgateCreditSweep', accountId, ...args));
        }
      }
    } while (cursor !== '0');
    return resolved;
  }

  private leaseFor(account: AccountState, key: KeyRecord, limits?: PlanLimits): Lease {
    // By key id alone (a key belongs to one account): no string built on every call.
    let lease = this.leases.get(key.id);
    if (!lease) {
      const field = `${this.replicaId}|${key.id}`;
      lease = {
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
      this.leases.set(key.id, lease);
    }
    lease.account = account;
    lease.key = key;
    if (limits) lease.limits = limits;
    return lease;
  }

  /** Adds `amount` to the lease in Redis; returns what is free beyond every lease (negative when over). */
  private async grow(lease: Lease, amount: Nano): Promise<Budgets> {
    const { account, key } = lease;
    const reply = await this.call(() =>
      this.script(
        'tollgateCreditGrow',
        account.id,
        account.balanceNano.toString(),
        account.version.toString(),
        utcDay(),
        account.dailySpentNano.toString(),
        key.id,
        key.spentNano.toString(),
        lease.field,
        amount.toString(),
      ),
    );
    if (!isFields(reply)) throw new Error('tollgateCreditGrow answered with something other than two lists of fields');
    const fields = reply;
    lease.leasedNano += amount;
    const known = toBudgets(fields, key, lease.limits);
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
    balance?: { balanceNano: Nano; version: bigint },
  ): Promise<void> {
    if (amount <= 0n && spent <= 0n && !balance) return;
    const extra = balance ? [balance.balanceNano.toString(), balance.version.toString()] : [];
    const held = await this.script(
      'tollgateCreditGiveBack',
      lease.account.id,
      lease.field,
      lease.key.id,
      amount.toString(),
      spent.toString(),
      ...extra,
    );
    // A sweeper took this replica for dead and released the whole lease: what is left of it is gone too.
    if (Number(held) === 0) lease.leasedNano = 0n;
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

  private script(name: ScriptName, accountId: string, ...args: string[]): Promise<unknown> {
    const keys = [
      `${this.options.prefix}cr:{${accountId}}`,
      `${this.options.prefix}cr:{${accountId}}:keys`,
      `${this.options.prefix}cr:{${accountId}}:holds`,
    ];
    const run = () => this.redis[name](...keys, ...args);
    return tracingEnabled()
      ? withSpan(`redis ${name}`, { 'db.system': 'redis', 'db.operation.name': 'EVALSHA' }, run, SpanKind.CLIENT)
      : run();
  }

  private async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw unavailable(error);
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

  private ownerKey(replicaId: string): string {
    return `${this.options.prefix}replica:${replicaId}`;
  }
}

const NO_DAILY_LIMIT: PlanLimits = { requestsPerMinute: 0, tokensPerMinute: 0, dailyLimitNano: null };

function slackOf(lease: Lease): Nano {
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
function deficitOf(budgets: Budgets): Nano {
  const least = smallest(budgets);
  return least < 0n ? -least : 0n;
}

/** Far from every limit: each budget still has room for LEASE_MIN_ROOM holds of this size. */
function roomFor(budgets: Budgets, holdNano: Nano): boolean {
  return smallest(budgets) >= LEASE_MIN_ROOM * (holdNano > 0n ? holdNano : 1n);
}

function slackFor(budgets: Budgets, holdNano: Nano): Nano {
  const byHolds = LEASE_HOLDS * holdNano;
  const byRoom = smallest(budgets) / 64n;
  return byHolds < byRoom ? byHolds : byRoom > 0n ? byRoom : 0n;
}

function plus(budgets: Budgets, amount: Nano): Budgets {
  return {
    balanceAvailable: budgets.balanceAvailable + amount,
    dailyRemaining: budgets.dailyRemaining === null ? null : budgets.dailyRemaining + amount,
    keyRemaining: budgets.keyRemaining === null ? null : budgets.keyRemaining + amount,
  };
}

function isFields(reply: unknown): reply is Fields {
  return (
    Array.isArray(reply) &&
    reply.length === 2 &&
    reply.every((list) => Array.isArray(list) && list.every((value) => value === null || typeof value === 'string'))
  );
}

function toBudgets([account, keys]: Fields, key: KeyRecord, limits: PlanLimits): Budgets {
  const [bal, res, dspent, dres] = account;
  const [kspent, kres] = keys;
  return {
    balanceAvailable: big(bal) - big(res),
    dailyRemaining: limits.dailyLimitNano === null ? null : limits.dailyLimitNano - big(dspent) - big(dres),
    keyRemaining: key.spendLimitNano === null ? null : key.spendLimitNano - big(kspent) - big(kres),
  };
}

function big(value: string | null | undefined): bigint {
  return value ? BigInt(value) : 0n;
}

function unavailable(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError('service_unavailable', {
        message: 'Credit reservations are unavailable (Redis); try again shortly',
        cause: error,
      });
}
