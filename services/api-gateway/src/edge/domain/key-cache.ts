import type { KeyRecord } from '../../accounts/domain/records';

/** What authentication knows of a key: defined beside the accounts that store it. */
export type { KeyRecord };

interface Entry {
  /** undefined: no key has this hash (a negative entry). */
  record: KeyRecord | undefined;
  loadedAt: number;
  lastAllowedAt: number;
}

export type CachedKey =
  { state: 'known'; record: KeyRecord; stale: boolean } | { state: 'unknown' } | { state: 'miss' };

export interface KeyCacheOptions {
  /** A record older than this is reloaded before use (bounds how long a changed expiry goes unseen). */
  maxAgeMs: number;
  /** A record older than this is served and reloaded in the background, so busy keys never wait. */
  refreshAfterMs: number;
  /** How long a hash nobody owns is remembered, so junk keys cost one store query, not one each. */
  unknownTtlMs: number;
  maxEntries: number;
}

const DEFAULTS: KeyCacheOptions = {
  maxAgeMs: 60_000,
  refreshAfterMs: 30_000,
  unknownTtlMs: 30_000,
  maxEntries: 100_000,
};

/**
 * In-process cache of key records by hash, so authentication costs no MongoDB round trip.
 * Safe because what it holds is either immutable (owner) or re-checked in Redis on every
 * request (revocation, plan); expiry changes only by a key roll, whose overlap (≥ 1 min) is
 * longer than `maxAgeMs`. Unknown hashes are remembered briefly: a key cannot be presented
 * before it exists (256 random bits), and creating one here clears its entry anyway.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<KeyRecord | undefined>>();
  private readonly options: KeyCacheOptions;

  constructor(options: Partial<KeyCacheOptions> = {}) {
    this.options = { ...DEFAULTS, ...options };
  }

  get(hash: string, now = Date.now()): CachedKey {
    const e = this.entries.get(hash);
    if (!e) return { state: 'miss' };
    const age = now - e.loadedAt;
    if (!e.record) return age < this.options.unknownTtlMs ? { state: 'unknown' } : { state: 'miss' };
    if (age > this.options.maxAgeMs) return { state: 'miss' };
    return { state: 'known', record: e.record, stale: age > this.options.refreshAfterMs };
  }

  set(hash: string, record: KeyRecord | undefined, now = Date.now()): void {
    const previous = this.entries.get(hash);
    if (!previous && this.entries.size >= this.options.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(hash, { record, loadedAt: now, lastAllowedAt: previous?.lastAllowedAt ?? 0 });
  }

  /** Loads a record (or its absence) into the cache; concurrent loads of one hash share one query. */
  load(hash: string, find: (hash: string) => Promise<KeyRecord | undefined>): Promise<KeyRecord | undefined> {
    const pending = this.loading.get(hash);
    if (pending) return pending;
    const loaded = find(hash)
      .then((record) => {
        this.set(hash, record);
        return record;
      })
      .finally(() => this.loading.delete(hash));
    this.loading.set(hash, loaded);
    return loaded;
  }

  markRevoked(hash: string): void {
    const e = this.entries.get(hash);
    if (e?.record) e.record = { ...e.record, revoked: true };
  }

  markAllowed(hash: string, now = Date.now()): void {
    const e = this.entries.get(hash);
    if (e) e.lastAllowedAt = now;
  }

  /** Whether any key passed the shared limiter within `windowMs`: then this instance can serve it without the stores. */
  servesRecentKeys(windowMs: number, now = Date.now()): boolean {
    for (const e of this.entries.values())
      if (e.record && !e.record.revoked && now - e.lastAllowedAt <= windowMs) return true;
    return false;
  }

  /** A key that passed the shared limiter within `windowMs` ("seen recently"), even if stale. */
  knownRecently(hash: string, windowMs: number, now = Date.now()): KeyRecord | undefined {
    const e = this.entries.get(hash);
    return e?.record && !e.record.revoked && now - e.lastAllowedAt <= windowMs ? e.record : undefined;
  }

  forget(hash: string): void {
    this.entries.delete(hash);
  }

  deleteByKeyId(keyId: string): void {
    for (const [hash, e] of this.entries) if (e.record?.keyId === keyId) this.entries.delete(hash);
  }

  clear(): void {
    this.entries.clear();
  }
}
