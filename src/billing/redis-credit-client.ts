/**
 * The Redis side of RedisCreditState: one connection with the scripts of redis-credit-scripts.ts defined on it, the
 * key layout, this replica's liveness key, and the sweep that releases the leases of replicas that died.
 */
import { Redis, type Result } from 'ioredis';
import { GatewayError } from '../errors/index.js';
import type { Nano } from '../money/index.js';
import { SpanKind, tracingEnabled, withSpan } from '../observability/index.js';
import { newId, type KeyRecord, type Storage } from '../storage/index.js';
import { utcDay } from './accounts.js';
import type { Budgets } from './credit-state.js';
import { keyPeriodSpend, keySpentIn } from './key-spend.js';
import type { ConfirmedBalance, Lease } from './redis-credit-lease.js';
import { GIVE_BACK, GROW, SWEEP } from './redis-credit-scripts.js';
import type { PlanLimits } from './plans.js';

type ScriptName = 'tollgateCreditGrow' | 'tollgateCreditGiveBack' | 'tollgateCreditSweep';
/** Every script takes the account's three keys (see `script`). */
const SCRIPTS: Record<ScriptName, string> = {
  tollgateCreditGrow: GROW,
  tollgateCreditGiveBack: GIVE_BACK,
  tollgateCreditSweep: SWEEP,
};
/** GROW's reply: the account's `bal, res, dspent, dres` and the key's `spent, res`, each a string or null (unset). */
type Fields = [Array<string | null>, Array<string | null>];

declare module 'ioredis' {
  /** The SCRIPTS, defined on the credit state's connection by RedisCreditClient's constructor. */
  interface RedisCommander<Context> {
    tollgateCreditGrow(...keysAndArgs: string[]): Result<unknown, Context>;
    tollgateCreditGiveBack(...keysAndArgs: string[]): Result<unknown, Context>;
    tollgateCreditSweep(...keysAndArgs: string[]): Result<unknown, Context>;
  }
}

export class RedisCreditClient {
  readonly replicaId = newId('replica');
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    // Unlike rate limits, money does not fail open: a request waits briefly for Redis and then gets a 503.
    // Auto-pipelining: the commands of concurrent requests issued in one tick share one write.
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, commandTimeout: 2_000, enableAutoPipelining: true });
    this.redis.on('error', () => undefined);
    for (const [name, lua] of Object.entries(SCRIPTS)) this.redis.defineCommand(name, { lua, numberOfKeys: 3 });
  }

  /** The hash field of this replica's lease on a key, in `cr:{account}:holds`. */
  leaseField(keyId: string): string {
    return `${this.replicaId}|${keyId}`;
  }

  /** Keeps this replica's leases alive for `ttlMs`. */
  async heartbeat(ttlMs: number): Promise<void> {
    await this.redis.set(this.ownerKey(this.replicaId), '1', 'PX', ttlMs);
  }

  async quit(): Promise<void> {
    await this.redis.quit();
  }

  /**
   * Adds `amount` to the lease in Redis; returns what is free beyond every lease (negative when over), or with
   * `ignoringLeases` what would be free without any lease (only the confirmed balance and spend).
   */
  async grow(lease: Lease, amount: Nano, ignoringLeases = false): Promise<Budgets> {
    const { account, key } = lease;
    const now = Date.now();
    const { period, spentNano } = keyPeriodSpend(key, now);
    let reply: unknown;
    try {
      reply = await this.script(
        'tollgateCreditGrow',
        account.id,
        account.balanceNano.toString(),
        account.version.toString(),
        utcDay(now),
        account.dailySpentNano.toString(),
        key.id,
        spentNano.toString(),
        lease.field,
        amount.toString(),
        period,
      );
    } catch (error) {
      throw unavailable(error);
    }
    if (!isFields(reply)) throw new Error('tollgateCreditGrow answered with something other than two lists of fields');
    return toBudgets(ignoringLeases ? withoutLeases(reply) : reply, key, lease.limits);
  }

  /**
   * Takes `amount` off the lease and moves `spent` of it to the day's and the key's spend (in the key's limit period
   * `period`, by default the current one), recording the balance when given. Returns false when the lease is gone
   * (a sweeper took this replica for dead and released it).
   */
  async giveBack(
    lease: Lease,
    amount: Nano,
    spent: Nano,
    balance?: ConfirmedBalance,
    chargedIn?: string,
  ): Promise<boolean> {
    const extra = balance ? [balance.balanceNano.toString(), balance.version.toString()] : [];
    const period = chargedIn ?? keyPeriodSpend(lease.key).period;
    const spentNano = keySpentIn(lease.key, period);
    const held = await this.script(
      'tollgateCreditGiveBack',
      lease.account.id,
      lease.field,
      lease.key.id,
      amount.toString(),
      spent.toString(),
      period,
      spentNano.toString(),
      ...extra,
    );
    return Number(held) !== 0;
  }

  /**
   * Releases the leases of replicas whose liveness key expired, taking the balance and the spend from the database
   * (it has every debit the dead replica committed); returns how many.
   */
  async sweep(storage: Storage): Promise<number> {
    let resolved = 0;
    const alive = new Map<string, boolean>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.prefix}cr:{*}:holds`, 'COUNT', 200);
      cursor = next;
      for (const holdsKey of keys) {
        const accountId = holdsKey.slice(holdsKey.indexOf('{') + 1, holdsKey.lastIndexOf('}'));
        for (const [field, amount] of Object.entries(await this.redis.hgetall(holdsKey))) {
          const [owner = '', keyId] = field.split('|');
          if (keyId === undefined || !/^\d+$/.test(amount)) continue;
          if (!alive.has(owner)) alive.set(owner, (await this.redis.exists(this.ownerKey(owner))) === 1);
          if (alive.get(owner)) continue;
          const day = utcDay();
          const [account, key, today] = await Promise.all([
            storage.accounts.get(accountId),
            storage.keys.get(keyId),
            storage.usage.totals(accountId, 'live', day, day),
          ]);
          const balance = account ? [account.balanceNano, account.version] : [0n, 0n];
          const keySpend = key ? keyPeriodSpend(key) : { period: '', spentNano: 0n };
          const args = [
            field,
            keyId,
            amount,
            ...balance.map(String),
            day,
            today.creditsNano.toString(),
            keySpend.spentNano.toString(),
            keySpend.period,
          ];
          resolved += Number(await this.script('tollgateCreditSweep', accountId, ...args));
        }
      }
    } while (cursor !== '0');
    return resolved;
  }

  private script(name: ScriptName, accountId: string, ...args: string[]): Promise<unknown> {
    const keys = [
      `${this.prefix}cr:{${accountId}}`,
      `${this.prefix}cr:{${accountId}}:keys`,
      `${this.prefix}cr:{${accountId}}:holds`,
    ];
    const run = () => this.redis[name](...keys, ...args);
    return tracingEnabled()
      ? withSpan(`redis ${name}`, { 'db.system': 'redis', 'db.operation.name': 'EVALSHA' }, run, SpanKind.CLIENT)
      : run();
  }

  private ownerKey(replicaId: string): string {
    return `${this.prefix}replica:${replicaId}`;
  }
}

/** Redis failing is a 503 for the request: credit is never granted without it. */
export function unavailable(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError('service_unavailable', {
        message: 'Credit reservations are unavailable (Redis); try again shortly',
        cause: error,
      });
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

/** The reply with every lease (`res`, `dres`, the key's `res`) left out. */
function withoutLeases([[bal, , dspent], [kspent]]: Fields): Fields {
  return [
    [bal ?? null, null, dspent ?? null, null],
    [kspent ?? null, null],
  ];
}

function big(value: string | null | undefined): bigint {
  return value ? BigInt(value) : 0n;
}
