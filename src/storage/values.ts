/** Conversions at the storage edge: both dialects give bigint for BIGINT, counts become numbers. */
import { randomBytes } from 'node:crypto';

export function big(value: bigint | number | string | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  return typeof value === 'bigint' ? value : BigInt(value);
}

export function bigOrNull(value: bigint | number | string | null | undefined): bigint | null {
  return value === null || value === undefined ? null : big(value);
}

export function num(value: bigint | number | string | null | undefined): number {
  return value === null || value === undefined ? 0 : Number(value);
}

export function numOrNull(value: bigint | number | string | null | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random per process, so ids made by several replicas in the same millisecond still differ. */
export const PROCESS_TAG = [...randomBytes(8)].map((byte) => BASE62[byte % 62]).join('');

let lastMs = 0;
let counter = 0;

/** `prefix_` + a time-ordered, unique id (ids sort by creation, which paging relies on); no syscall per id. */
export function newId(prefix: string): string {
  const now = Date.now();
  counter = now === lastMs ? counter + 1 : 0;
  lastMs = now;
  return `${prefix}_${now.toString(36).padStart(9, '0')}${counter.toString(36).padStart(3, '0')}${PROCESS_TAG}`;
}

/** A JSON column read back: storage wrote it from a `T` itself, so the text is not checked again. */
export function storedJson<T>(text: string): T {
  return JSON.parse(text) as T;
}
