/**
 * Turns an Authorization header into a key record. Lookups are cached for at most `ttlMs` (1 s) so the
 * database stays off the hot path while a revocation made anywhere takes effect within a second. Keys in use are
 * looked up again by a timer, in one query per REFRESH_BATCH keys, once their entry is half-way to expiry: a
 * steady client never waits for the database, and no request pays for another's refresh. Only a key unused for
 * a while is looked up on the request's path.
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
  /** Presented since the entry was filled: the timer refreshes it. */
  used: boolean;
}

/** Keys per refresh query (an `IN` list). */
const REFRESH_BATCH = 500;

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
  /** Fingerprints of entries presented since they were filled. */
  private readonly inUse = new Set<string>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing = false;

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
    let entry = this.cache.get(fingerprint);
    if (!entry || entry.expires <= Date.now()) {
      entry = await this.lookUp(fingerprint, entry?.hash ?? hashKey(this.options.secret, presented));
    } else if (!entry.used) {
      entry.used = true;
      this.inUse.add(fingerprint);
    }
    const key = entry.key;
    if (!key || key.revokedAt !== null) throw new GatewayError('invalid_api_key');
    return key;
  }

  /**
   * The key behind an Authorization header as last looked up (a revoked one too), without looking it up: who a
   * refused request came from, for its log line. Undefined when it was never looked up or is not a key.
   */
  known(authorization: string | undefined): KeyRecord | undefined {
    const presented = bearer(authorization);
    if (!presented || !this.pattern.test(presented)) return undefined;
    return this.cache.get(digest('sha256', presented, 'base64'))?.key;
  }

  /** Drops cached lookups (after a revocation through this process). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
    this.inUse.clear();
  }

  close(): void {
    clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /** The entry is good until `ttlMs` after the lookup started, so what it says is never older than that. */
  private async lookUp(fingerprint: string, hash: string): Promise<CacheEntry> {
    const started = Date.now();
    const generation = this.generation;
    const entry: CacheEntry = {
      hash,
      key: await this.options.storage.keys.getByHash(hash),
      expires: started + this.ttlMs,
      used: false,
    };
    if (generation === this.generation) this.remember(fingerprint, entry);
    if (!this.refreshTimer) {
      this.refreshTimer = setInterval(() => void this.refreshInUse(), this.ttlMs / 4);
      this.refreshTimer.unref();
    }
    return entry;
  }

  /** Looks up again, in batches, the keys presented since their entry was filled and now half-way to expiry. */
  private async refreshInUse(): Promise<void> {
    if (this.refreshing) return;
    const now = Date.now();
    const due: Array<[fingerprint: string, hash: string]> = [];
    for (const fingerprint of this.inUse) {
      const entry = this.cache.get(fingerprint);
      if (!entry || entry.expires <= now) this.inUse.delete(fingerprint);
      // Half-way give or take half a tick: an entry filled on a tick would otherwise sit exactly at half-way on a
      // later tick, wait for the next one and be refreshed with a quarter of its life left.
      else if (entry.expires - now < this.ttlMs / 2 + this.ttlMs / 8) {
        this.inUse.delete(fingerprint);
        // A use while the lookup runs marks it again, and the refreshed entry keeps that mark.
        entry.used = false;
        due.push([fingerprint, entry.hash]);
      }
    }
    this.refreshing = true;
    try {
      for (let i = 0; i < due.length; i += REFRESH_BATCH) {
        const batch = due.slice(i, i + REFRESH_BATCH);
        const started = Date.now();
        const generation = this.generation;
        const found = await this.options.storage.keys.getByHashes(batch.map(([, hash]) => hash));
        if (generation !== this.generation) continue;
        for (const [fingerprint, hash] of batch) {
          const used = this.cache.get(fingerprint)?.used ?? false;
          this.remember(fingerprint, { hash, key: found.get(hash), expires: started + this.ttlMs, used });
        }
      }
    } catch {
      // Unrefreshed entries expire; the next request for such a key looks it up itself.
    } finally {
      this.refreshing = false;
    }
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
