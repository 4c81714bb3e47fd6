/**
 * Holds and unwritten charges shared by every replica, in Redis, exact to the nano-USD.
 *
 * Per account (hash tag `{account}`, so one cluster slot): `cr:{a}` holds the balance the database confirmed
 * (`bal`, `ver`: the highest database version wins), the total held (`res`), charges not yet written (`pend`)
 * and the day's spend and holds (`day`, `dspent`, `dres`); `cr:{a}:keys` the per-key `spent`/`res`;
 * `cr:{a}:holds` one field per open hold or unwritten charge, naming the replica that owns it.
 *
 * Money only moves through HINCRBY (exact 64-bit integers; Redis refuses "-0", so zero amounts are skipped); every comparison is made in TypeScript with bigint,
 * never in Lua (whose numbers are doubles). A hold is taken optimistically: added, then checked, and rolled back
 * when it does not fit, so a race can refuse a request but never spend what another replica holds.
 *
 * A replica that dies leaves its holds behind: every replica refreshes a liveness key, and a sweeper on every
 * replica resolves the holds of replicas whose key expired (HOLD_OWNER_TTL_MS): a hold is released; an unwritten
 * charge is cleared, and counted as spent only if its debit reached the ledger.
 */
import { SpanKind, tracingEnabled, withSpan } from '../observability/index.js';
import { Redis } from 'ioredis';
import { GatewayError } from '../errors/index.js';
import type { Nano } from '../money/index.js';
import { newId, type KeyRecord, type Storage } from '../storage/index.js';
import { utcDay, type AccountState } from './accounts.js';
import { capCharge, type Budgets, type CreditState, type Hold } from './credit-state.js';
import type { PlanLimits } from './plans.js';

const HOLD_OWNER_TTL_MS = 5_000;
const HEARTBEAT_MS = 1_000;
const SWEEP_MS = 2_000;

/** Subtracts a non-negative amount (as a string); Redis refuses "-0", so zero is skipped. */
const SUBTRACT = `
local function sub(key, field, amount) if amount ~= '0' then redis.call('HINCRBY', key, field, '-' .. amount) end end`;

/** Brings the shared state up to what this replica read from the database, then returns it. */
const SYNC = `
local v = redis.call('HGET', KEYS[1], 'ver')
if (not v) or tonumber(v) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'bal', ARGV[1], 'ver', ARGV[2]) end
if redis.call('HGET', KEYS[1], 'day') ~= ARGV[3] then redis.call('HSET', KEYS[1], 'day', ARGV[3], 'dspent', ARGV[4]) end
redis.call('HSETNX', KEYS[2], ARGV[5] .. ':spent', ARGV[6])
return {redis.call('HMGET', KEYS[1], 'bal', 'res', 'pend', 'dspent', 'dres'), redis.call('HMGET', KEYS[2], ARGV[5] .. ':spent', ARGV[5] .. ':res')}`;

/** Adds a hold and returns the state with it, for the caller to check. */
const TAKE = `
redis.call('HINCRBY', KEYS[1], 'res', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'dres', ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[2] .. ':res', ARGV[1])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
return {redis.call('HMGET', KEYS[1], 'bal', 'res', 'pend', 'dspent', 'dres'), redis.call('HMGET', KEYS[2], ARGV[2] .. ':spent', ARGV[2] .. ':res')}`;

/** Ends a hold (once: only an open hold, 'h', is ended) and optionally records a charge in its place. */
const END_HOLD = `${SUBTRACT}
local held = redis.call('HGET', KEYS[3], ARGV[3])
if (not held) or string.sub(held, 1, 1) ~= 'h' then return 0 end
redis.call('HDEL', KEYS[3], ARGV[3])
sub(KEYS[1], 'res', ARGV[1])
sub(KEYS[1], 'dres', ARGV[1])
sub(KEYS[2], ARGV[2] .. ':res', ARGV[1])
if ARGV[4] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'pend', ARGV[4])
  redis.call('HINCRBY', KEYS[1], 'dspent', ARGV[4])
  redis.call('HINCRBY', KEYS[2], ARGV[2] .. ':spent', ARGV[4])
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[5])
end
return 1`;

/**
 * Clears an unwritten charge (once). ARGV: charge, keyId, holdId, amount not spent after all (0 when the
 * ledger has it in full), then optionally a confirmed balance and version.
 */
const CLEAR_CHARGE = `${SUBTRACT}
local charged = redis.call('HGET', KEYS[3], ARGV[3])
if (not charged) or string.sub(charged, 1, 1) ~= 'p' then return 0 end
redis.call('HDEL', KEYS[3], ARGV[3])
sub(KEYS[1], 'pend', ARGV[1])
sub(KEYS[1], 'dspent', ARGV[4])
sub(KEYS[2], ARGV[2] .. ':spent', ARGV[4])
if ARGV[5] then
  local v = redis.call('HGET', KEYS[1], 'ver')
  if (not v) or tonumber(v) < tonumber(ARGV[6]) then redis.call('HSET', KEYS[1], 'bal', ARGV[5], 'ver', ARGV[6]) end
end
return 1`;

const SCRIPTS = {
  tollgateCreditSync: { lua: SYNC, keys: 2 },
  tollgateCreditTake: { lua: TAKE, keys: 3 },
  tollgateCreditEndHold: { lua: END_HOLD, keys: 3 },
  tollgateCreditClearCharge: { lua: CLEAR_CHARGE, keys: 3 },
};
const SCRIPT_NAMES = new Map(Object.entries(SCRIPTS).map(([name, { lua }]) => [lua, name]));

type Fields = [Array<string | null>, Array<string | null>];

export interface RedisCreditStateOptions {
  url: string;
  prefix: string;
  storage: Storage;
  /** How long a replica's holds outlive its last heartbeat (default 5 s). */
  ownerTtlMs?: number;
  onError?: (error: unknown) => void;
}

export class RedisCreditState implements CreditState {
  private readonly redis: Redis;
  private readonly replicaId = newId('replica');
  private timers: NodeJS.Timeout[] = [];
  /** Releases and confirmations that failed after the response: retried by the sweep timer, never dropped. */
  private retries: Array<() => Promise<unknown>> = [];

  constructor(private readonly options: RedisCreditStateOptions) {
    // Unlike rate limits, money does not fail open: a request waits briefly for Redis and then gets a 503.
    // Auto-pipelining: the commands of concurrent requests issued in one tick share one write.
    this.redis = new Redis(options.url, { maxRetriesPerRequest: 2, commandTimeout: 2_000, enableAutoPipelining: true });
    this.redis.on('error', () => undefined);
    for (const [name, { lua, keys }] of Object.entries(SCRIPTS)) this.redis.defineCommand(name, { lua, numberOfKeys: keys });
  }

  start(): void {
    const beat = () => this.redis.set(this.ownerKey(this.replicaId), '1', 'PX', this.options.ownerTtlMs ?? HOLD_OWNER_TTL_MS).catch((e) => this.options.onError?.(e));
    void beat();
    const sweep = async () => {
      await this.retryFailed();
      await this.sweep();
    };
    this.timers.push(setInterval(beat, HEARTBEAT_MS), setInterval(() => void sweep().catch((e) => this.options.onError?.(e)), SWEEP_MS));
    for (const timer of this.timers) timer.unref();
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    await this.redis.quit().catch(() => undefined);
  }

  async budgets(account: AccountState, key: KeyRecord, limits: PlanLimits): Promise<Budgets> {
    const fields = (await this.call(() => this.script(
      SYNC,
      2,
      this.accountKey(account.id),
      this.keysKey(account.id),
      account.balanceNano.toString(),
      account.version.toString(),
      utcDay(),
      account.dailySpentNano.toString(),
      key.id,
      key.spentNano.toString(),
    ))) as Fields;
    return toBudgets(fields, key, limits);
  }

  async take(hold: Hold, limits: PlanLimits): Promise<boolean> {
    const { account, key } = hold;
    const fields = (await this.call(() => this.script(
      TAKE,
      3,
      this.accountKey(account.id),
      this.keysKey(account.id),
      this.holdsKey(account.id),
      hold.amountNano.toString(),
      key.id,
      hold.id,
      holdValue('h', hold.amountNano, hold, this.replicaId),
    ))) as Fields;
    // The state now includes this hold: it fits when nothing went negative.
    const left = toBudgets(fields, key, limits);
    const fits = (value: Nano | null) => value === null || value >= 0n;
    if (fits(left.balanceAvailable) && fits(left.dailyRemaining) && fits(left.keyRemaining)) return true;
    await this.release(hold);
    return false;
  }

  async release(hold: Hold): Promise<void> {
    await this.orRetry(() => this.endHold(hold, '', ''));
  }

  async charge(hold: Hold, actualNano: Nano): Promise<Nano> {
    try {
      // Within its own hold a request is always charged in full (no read needed). `free` can read low for a
      // moment (a newer database balance may already include charges still pending), so it only caps the excess.
      let charge = actualNano;
      if (actualNano > hold.amountNano) {
        const [bal, res, pend] = (await this.redis.hmget(this.accountKey(hold.account.id), 'bal', 'res', 'pend')).map(big);
        charge = capCharge(actualNano, hold.amountNano, bal! - res! - pend! + hold.amountNano);
      }
      await this.endHold(hold, charge.toString(), holdValue('p', charge, hold, this.replicaId));
      return charge;
    } catch (error) {
      // The charge cannot be recorded safely: give the hold back (eventually) and let the caller answer 503.
      await this.release(hold);
      throw unavailable(error);
    }
  }

  async confirmed(hold: Hold, chargedNano: Nano, appliedNano: Nano, balance: { balanceNano: Nano; version: bigint }): Promise<void> {
    await this.orRetry(() => this.script(
      CLEAR_CHARGE,
      3,
      this.accountKey(hold.account.id),
      this.keysKey(hold.account.id),
      this.holdsKey(hold.account.id),
      chargedNano.toString(),
      hold.key.id,
      hold.id,
      (chargedNano + appliedNano).toString(),
      balance.balanceNano.toString(),
      balance.version.toString(),
    ));
  }

  /** Runs one of the scripts by its SHA (defineCommand loads it once per connection). */
  private script(lua: string, _keys: number, ...args: string[]): Promise<unknown> {
    const name = SCRIPT_NAMES.get(lua)!;
    const run = () => (this.redis as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[name]!(...args);
    return tracingEnabled() ? withSpan(`redis ${name}`, { 'db.system': 'redis', 'db.operation.name': 'EVALSHA' }, run, SpanKind.CLIENT) : run();
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

  /** Resolves the holds and unwritten charges of replicas that stopped refreshing their liveness key. */
  async sweep(): Promise<number> {
    let resolved = 0;
    const alive = new Map<string, boolean>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', `${this.options.prefix}cr:{*}:holds`, 'COUNT', 200);
      cursor = next;
      for (const holdsKey of keys) {
        const accountId = holdsKey.slice(holdsKey.indexOf('{') + 1, holdsKey.lastIndexOf('}'));
        for (const [holdId, value] of Object.entries(await this.redis.hgetall(holdsKey))) {
          const [state, amount, keyId, owner, requestId] = value.split('|') as [string, string, string, string, string];
          if (!alive.has(owner)) alive.set(owner, (await this.redis.exists(this.ownerKey(owner))) === 1);
          if (alive.get(owner)) continue;
          const keys = [this.accountKey(accountId), this.keysKey(accountId), holdsKey];
          if (state === 'h') {
            resolved += Number(await this.script(END_HOLD, 3, ...keys, amount, keyId, holdId, ''));
          } else {
            const debited = await this.options.storage.ledger.debitedFor(requestId);
            const notSpent = BigInt(amount) - debited;
            resolved += Number(await this.script(CLEAR_CHARGE, 3, ...keys, amount, keyId, holdId, (notSpent > 0n ? notSpent : 0n).toString()));
          }
        }
      }
    } while (cursor !== '0');
    return resolved;
  }

  private async endHold(hold: Hold, charge: string, value: string): Promise<void> {
    const { account, key } = hold;
    await this.script(END_HOLD, 3, this.accountKey(account.id), this.keysKey(account.id), this.holdsKey(account.id), hold.amountNano.toString(), key.id, hold.id, charge, value);
  }

  private accountKey(accountId: string): string {
    return `${this.options.prefix}cr:{${accountId}}`;
  }

  private keysKey(accountId: string): string {
    return `${this.options.prefix}cr:{${accountId}}:keys`;
  }

  private holdsKey(accountId: string): string {
    return `${this.options.prefix}cr:{${accountId}}:holds`;
  }

  private ownerKey(replicaId: string): string {
    return `${this.options.prefix}replica:${replicaId}`;
  }
}

function unavailable(error: unknown): GatewayError {
  return error instanceof GatewayError
    ? error
    : new GatewayError('service_unavailable', { message: 'Credit reservations are unavailable (Redis); try again shortly', cause: error });
}

function holdValue(state: 'h' | 'p', amount: Nano, hold: Hold, replicaId: string): string {
  return `${state}|${amount}|${hold.key.id}|${replicaId}|${hold.requestId}`;
}

function big(value: string | null | undefined): bigint {
  return value ? BigInt(value) : 0n;
}

function toBudgets([account, keys]: Fields, key: KeyRecord, limits: PlanLimits): Budgets {
  const [bal, res, pend, dspent, dres] = account.map(big) as [bigint, bigint, bigint, bigint, bigint];
  const [kspent, kres] = keys.map(big) as [bigint, bigint];
  return {
    balanceAvailable: bal - res - pend,
    dailyRemaining: limits.dailyLimitNano === null ? null : limits.dailyLimitNano - dspent - dres,
    keyRemaining: key.spendLimitNano === null ? null : key.spendLimitNano - kspent - kres,
  };
}
