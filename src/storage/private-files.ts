/**
 * The data directory and the database files hold account data and key hashes: only tollgate's own user may
 * read them. New ones are created that way, and looser modes found at start are tightened (where this user owns
 * the file; otherwise they are left alone, for the operator to fix).
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and its parents) if needed, and takes group and other access away from it. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(dir, PRIVATE_DIR_MODE);
}

/** Creates `file` empty and private if it does not exist; takes group and other access away if it does. */
export function ensurePrivateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  tighten(file, PRIVATE_FILE_MODE);
}

/** Takes group and other access away from `path` if it exists. */
export function tighten(path: string, allowed: number): void {
  try {
    const mode = statSync(path).mode & 0o777;
    if (mode & ~allowed) chmodSync(path, mode & allowed);
  } catch {
    // absent, or owned by another user: nothing this process may change
  }
}
