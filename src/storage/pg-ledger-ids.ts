/**
 * Ledger ids on PostgreSQL take their time from the database's clock, read once the batch holds its accounts' row
 * locks: ids sort in the order the commits took effect on every replica, whatever the replicas' own clocks, so
 * each row's `balance_after` follows from the row before it in the ledger's order. The time is in microseconds:
 * two commits on one account are at least a WAL flush apart.
 *
 * `led_p` + the microseconds in 14 hex digits + the batch's number in this process (4 base-36 digits) + the row's
 * place in the batch (4) + the process tag. The `p` sorts these after ids of the older form (`led_0…`, milliseconds
 * in base 36), which this database may still hold.
 */
import { PROCESS_TAG } from './values.js';

const BATCHES = 36 ** 4;
let batches = 0;

/** What sets apart this batch's ids from those of every other batch in the same microsecond. */
export function nextBatchTag(): string {
  batches = (batches + 1) % BATCHES;
  return batches.toString(36).padStart(4, '0');
}

/** The part of a ledger id after the time: the batch's tag, the row's place in it, the process. */
export function ledgerIdSuffix(batchTag: string, row: number): string {
  return `${batchTag}${row.toString(36).padStart(4, '0')}${PROCESS_TAG}`;
}

/** A ledger id from the database's time in microseconds (as `ledgerIdSql` forms it inside a statement). */
export function pgLedgerId(microseconds: bigint, suffix: string): string {
  return `led_p${microseconds.toString(16).padStart(14, '0')}${suffix}`;
}

/** The same id in SQL, from an int8 expression of microseconds and a text expression of the suffix. */
export function ledgerIdSql(microseconds: string, suffix: string): string {
  return `'led_p' || lpad(to_hex(${microseconds}), 14, '0') || ${suffix}`;
}

/** SQL for the database's time now, in microseconds. */
export const NOW_MICROSECONDS_SQL = '(extract(epoch FROM clock_timestamp()) * 1000000)::int8';
