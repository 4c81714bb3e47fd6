/**
 * Turns an Authorization header into a key record. Lookups are cached for at most `ttlMs` (1 s) so the
 * database stays off the hot path while a revocation made anywhere takes effect within a second.
 */
import { GatewayError } from '../errors/index.js';
import type { KeyRecord, Storage } from '../storage/index.js';
import { hashKey, keyPattern } from './keys.js';

interface CacheEntry {
  key: KeyRecord | undefined;
  expires: number;
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

  constructor(private readonly options: AuthenticatorOptions) {
    this.pattern = keyPattern(options.prefix);
    this.ttlMs = options.ttlMs ?? 1000;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  async authenticate(authorization: string | undefined): Promise<KeyRecord> {
    const presented = bearer(authorization);
    if (!presented) throw new GatewayError('missing_api_key');
    if (!this.pattern.test(presented)) throw new GatewayError('invalid_api_key');
    // Keys are looked up by their HMAC: the comparison is an index lookup on a hash, not a string compare of secrets.
    const hash = hashKey(this.options.secret, presented);
    const now = Date.now();
    let entry = this.cache.get(hash);
    if (!entry || entry.expires <= now) {
      entry = { key: await this.options.storage.keys.getByHash(hash), expires: now + this.ttlMs };
      this.remember(hash, entry);
    }
    const key = entry.key;
    if (!key || key.revokedAt !== null) throw new GatewayError('invalid_api_key');
    return key;
  }

  /** Drops cached lookups (after a revocation through this process). */
  invalidate(): void {
    this.cache.clear();
  }

  private remember(hash: string, entry: CacheEntry): void {
    if (this.cache.size >= this.maxEntries) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.delete(hash);
    this.cache.set(hash, entry);
  }
}

function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  return match?.[1] ?? (header.trim() || undefined);
}
