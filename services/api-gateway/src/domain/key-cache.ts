export interface KeyRecord {
  keyId: string;
  accountId: string;
  expiresAt: number | null;
  revoked: boolean;
  perMinute: number;
  perDay: number;
}

interface Entry {
  record: KeyRecord;
  loadedAt: number;
  lastAllowedAt: number;
}

/**
 * In-process cache of key records by hash, so authentication costs no MongoDB round trip.
 * Safe because what it holds is either immutable (owner, expiry) or re-checked in Redis on
 * every request (revocation, plan); entries are reloaded after `ttlMs` anyway, which bounds
 * staleness if Redis loses its data.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 100_000,
  ) {}

  get(hash: string, now = Date.now()): KeyRecord | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (now - e.loadedAt > this.ttlMs) return undefined;
    return e.record;
  }

  set(hash: string, record: KeyRecord, now = Date.now()): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    const previous = this.entries.get(hash);
    this.entries.set(hash, { record, loadedAt: now, lastAllowedAt: previous?.lastAllowedAt ?? 0 });
  }

  markAllowed(hash: string, now = Date.now()): void {
    const e = this.entries.get(hash);
    if (e) e.lastAllowedAt = now;
  }

  /** A key that passed the shared limiter within `windowMs` ("seen recently"), even if stale. */
  knownRecently(hash: string, windowMs: number, now = Date.now()): KeyRecord | undefined {
    const e = this.entries.get(hash);
    return e && !e.record.revoked && now - e.lastAllowedAt <= windowMs ? e.record : undefined;
  }

  deleteByKeyId(keyId: string): void {
    for (const [hash, e] of this.entries) if (e.record.keyId === keyId) this.entries.delete(hash);
  }

  clear(): void {
    this.entries.clear();
  }
}
