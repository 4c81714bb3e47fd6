/**
 * Turns an Authorization header into a key record. Lookups are cached for at most `ttlMs` (1 s) so the
 * database stays off the hot path while a revocation made anywhere takes effect within a second. A key in use is
 * looked up again in the background once its entry is half-way to expiry, so a steady client never waits for the
 * database; only a key unused for a while does.
 */
import { hash as digest } from 'node:crypto';
import { GatewayError } from '../errors/index.js';
import type { KeyRecord, Storage } from '../storage/index.js';
import { hashKey, keyPattern } from './keys.js';

interface CacheEntry {
  /** The key's HMAC, what the database stores and looks up. */
  hash: string;
  key: KeyRecord | undefined;
  expires: number;
  refreshing?: boolean;
}

export interface AuthenticatorOptions {
  storage: Storage;
  secret: string;
  prefix: string;
  ttlMs?: number;
  maxEntries?: number;
}

export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly pattern: RegExp;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /** Bumped by `invalidate`: a lookup started before it must not put its answer back. */
  private generation = 0;

  constructor(private readonly options: AuthenticatorOptions) {
    this.pattern = keyPattern(options.prefix);
    this.ttlMs = options.ttlMs ?? 1000;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  async authenticate(authorization: string | undefined): Promise<KeyRecord> {
    const presented = bearer(authorization);
    if (!presented) throw new GatewayError('missing_api_key');
    if (!this.pattern.test(presented)) throw new GatewayError('invalid_api_key');
    // The cache is keyed by a plain SHA-256 of the key (a one-shot hash, several times cheaper than the HMAC),
    // so no key is kept in memory; the database is looked up by the key's HMAC, an index lookup on a hash.
    const fingerprint = digest('sha256', presented, 'base64');
    const now = Date.now();
    let entry = this.cache.get(fingerprint);
    if (!entry || entry.expires <= now) {
      entry = await this.lookUp(fingerprint, entry?.hash ?? hashKey(this.options.secret, presented));
    } else if (entry.expires - now < this.ttlMs / 2 && !entry.refreshing) {
      const stale = entry;
      stale.refreshing = true;
      this.lookUp(fingerprint, stale.hash).catch(() => (stale.refreshing = false));
    }
    const key = entry.key;
    if (!key || key.revokedAt !== null) throw new GatewayError('invalid_api_key');
    return key;
  }

  /** Drops cached lookups (after a revocation through this process). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  /** The entry is good until `ttlMs` after the lookup started, so what it says is never older than that. */
  private async lookUp(fingerprint: string, hash: string): Promise<CacheEntry> {
    const started = Date.now();
    const generation = this.generation;
    const entry: CacheEntry = { hash, key: await this.options.storage.keys.getByHash(hash), expires: started + this.ttlMs };
    if (generation === this.generation) this.remember(fingerprint, entry);
    return entry;
  }

  private remember(fingerprint: string, entry: CacheEntry): void {
    if (this.cache.size >= this.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.delete(fingerprint);
    this.cache.set(fingerprint, entry);
  }
}

function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  return match?.[1] ?? (header.trim() || undefined);
}
