/**
 * The Lua scripts behind RedisCreditState. Per account (hash tag `{account}`, one cluster slot): KEYS[1] `cr:{a}`
 * holds the balance the database confirmed (`bal`, `ver`: the highest version wins), everything leased (`res`), the
 * day's confirmed spend and leases (`day`, `dspent`, `dres`); KEYS[2] `cr:{a}:keys` each key's limit period
 * (`<key>:period`, `periodOf`: '' for a limit that never resets), its confirmed spend in that period (`spent`) and
 * its leases (`res`); KEYS[3] `cr:{a}:holds` one field per lease, `<replica>|<key>` = the amount it holds.
 *
 * A key's period moves forward the first time a replica names a later one: its spend starts again at the database's
 * figure for that period, which the replica passes (0 until its lookup of the key saw that period). Spend confirmed
 * for an earlier period is not counted (it belongs to a period that is over); leases count in whatever period is
 * current until they end.
 *
 * Money only moves through HINCRBY (exact 64-bit integers). Comparisons of amounts are made in TypeScript with
 * bigint; the one made here (`greater`) compares decimal strings, never Lua's doubles. Redis refuses "-0", so zero
 * amounts are skipped.
 */

const HELPERS = `
local function add(key, field, amount) if amount ~= '0' then redis.call('HINCRBY', key, field, amount) end end
local function sub(key, field, amount) if amount ~= '0' then redis.call('HINCRBY', key, field, '-' .. amount) end end
local function greater(a, b) if #a ~= #b then return #a > #b end return a > b end
local function newerBalance(bal, ver)
  local v = redis.call('HGET', KEYS[1], 'ver')
  if (not v) or greater(ver, v) then redis.call('HSET', KEYS[1], 'bal', bal, 'ver', ver) end
end
-- Brings the key to 'period' (starting its spend at 'spent'); false when Redis is already in a later one.
local function keyPeriod(keyId, period, spent)
  local current = redis.call('HGET', KEYS[2], keyId .. ':period')
  if current == period then return true end
  if current and #current == #period and current:sub(1, 1) == period:sub(1, 1) and current > period then return false end
  redis.call('HSET', KEYS[2], keyId .. ':period', period, keyId .. ':spent', spent)
  return true
end
local function state(keyId)
  return {redis.call('HMGET', KEYS[1], 'bal', 'res', 'dspent', 'dres'), redis.call('HMGET', KEYS[2], keyId .. ':spent', keyId .. ':res')}
end`;

/**
 * Brings the shared state up to this replica's database view, adds `amount` to the lease, and returns the state
 * with it for the caller to check. ARGV: bal, ver, day, day's spend, keyId, key's spend in the period, lease field,
 * amount, the key's period.
 */
export const GROW = `${HELPERS}
newerBalance(ARGV[1], ARGV[2])
if redis.call('HGET', KEYS[1], 'day') ~= ARGV[3] then redis.call('HSET', KEYS[1], 'day', ARGV[3], 'dspent', ARGV[4]) end
keyPeriod(ARGV[5], ARGV[9], ARGV[6])
if ARGV[8] ~= '0' then
  add(KEYS[1], 'res', ARGV[8])
  add(KEYS[1], 'dres', ARGV[8])
  add(KEYS[2], ARGV[5] .. ':res', ARGV[8])
  redis.call('HINCRBY', KEYS[3], ARGV[7], ARGV[8])
end
return state(ARGV[5])`;

/**
 * Gives part of a lease back: `returned` leaves the lease, and `spent` of it is counted spent (the database
 * wrote that debit) in the key's period, optionally with the balance and version the commit confirmed. Returns 0
 * when the lease no longer exists (a sweeper resolved it), and then only the spend and balance are applied.
 * ARGV: lease field, keyId, returned, spent, the key's period, the key's spend in it, [bal, ver].
 */
export const GIVE_BACK = `${HELPERS}
local held = redis.call('HGET', KEYS[3], ARGV[1])
if held then
  sub(KEYS[1], 'res', ARGV[3])
  sub(KEYS[1], 'dres', ARGV[3])
  sub(KEYS[2], ARGV[2] .. ':res', ARGV[3])
  if ARGV[3] == held then redis.call('HDEL', KEYS[3], ARGV[1]) else sub(KEYS[3], ARGV[1], ARGV[3]) end
end
add(KEYS[1], 'dspent', ARGV[4])
if ARGV[4] ~= '0' and keyPeriod(ARGV[2], ARGV[5], ARGV[6]) then add(KEYS[2], ARGV[2] .. ':spent', ARGV[4]) end
if ARGV[7] then newerBalance(ARGV[7], ARGV[8]) end
if held then return 1 end
return 0`;

/**
 * Resolves the lease of a replica that died: releases it (if it still holds `amount`), and takes the balance,
 * the day's spend and the key's spend in its period from the database, which holds every debit the dead replica
 * committed. ARGV: lease field, keyId, amount, bal, ver, day, day's spend, key's spend in the period, the period.
 */
export const SWEEP = `${HELPERS}
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[3] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
sub(KEYS[1], 'res', ARGV[3])
sub(KEYS[1], 'dres', ARGV[3])
sub(KEYS[2], ARGV[2] .. ':res', ARGV[3])
newerBalance(ARGV[4], ARGV[5])
local dspent = redis.call('HGET', KEYS[1], 'dspent') or '0'
if redis.call('HGET', KEYS[1], 'day') == ARGV[6] and greater(ARGV[7], dspent) then redis.call('HSET', KEYS[1], 'dspent', ARGV[7]) end
if keyPeriod(ARGV[2], ARGV[9], ARGV[8]) then
  local kspent = redis.call('HGET', KEYS[2], ARGV[2] .. ':spent') or '0'
  if greater(ARGV[8], kspent) then redis.call('HSET', KEYS[2], ARGV[2] .. ':spent', ARGV[8]) end
end
return 1`;
