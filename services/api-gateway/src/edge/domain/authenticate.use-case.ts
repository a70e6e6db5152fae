import { bearerToken } from '@signal/service-kit';
import { planCaps, type PlanCaps } from '../../accounts/domain/plan-caps';
import { hasApiKeyShape, hasValidChecksum, hashApiKey } from '../../accounts/domain/api-key';
import type { InFlightLimit } from './in-flight';
import type { RequestThrottle } from './throttle';
import type { KeyCache } from './key-cache';
import type { KeyRecord } from '../../accounts/domain/records';
import type { KeyDirectory } from '../../accounts/domain/ports';
import {
  rateView,
  retryAfterSeconds,
  type KeyDecision,
  type LocalFallbackLimiter,
  type RateView,
  type SharedLimiter,
} from './rate-limit';

export interface AuthDeps {
  keys: KeyDirectory;
  cache: KeyCache;
  limiter: SharedLimiter;
  fallback: LocalFallbackLimiter;
  /** The per-address guard: every refused credential counts against its client, and only those. */
  guard: RequestThrottle;
  /** Requests in flight per account in this process. */
  inFlight: InFlightLimit;
  /** The caps of a plan that sets none of its own. */
  capDefaults: PlanCaps;
  pepper: string;
  knownKeyWindowMs: number;
  onKeyUsed: (keyId: string) => void;
}

/** Whose key it was, when a request with an owned key was refused (usage counts it). */
export interface KeyOwner {
  accountId: string;
  keyId: string;
}

export type AuthResult =
  | {
      ok: true;
      accountId: string;
      keyId: string;
      rate: RateView;
      /** When the key stops being valid (Unix ms), if it does. */
      expiresAt: number | null;
      /** What the account's plan allows at once. */
      caps: PlanCaps;
      /** Frees the request's place among the account's requests in flight: call once it is done. */
      release: () => void;
    }
  | {
      ok: false;
      code: 'UNAUTHORIZED' | 'KEY_EXPIRED';
      rate: RateView;
      owner?: KeyOwner;
    }
  | { ok: false; code: 'RATE_LIMITED'; rate: RateView; retryAfter: number; owner?: KeyOwner }
  | {
      ok: false;
      code: 'TOO_MANY_IN_FLIGHT';
      rate: RateView;
      retryAfter: number;
      limit: number;
      owner: KeyOwner;
    }
  | { ok: false; code: 'UNAVAILABLE'; retryAfter: number };

/** Whose usage a judged request counts as: the key's owner, when the key was found. */
export function usageOwnerOf(result: AuthResult): KeyOwner | undefined {
  return result.ok ? result : result.code !== 'UNAVAILABLE' ? result.owner : undefined;
}

/** The window the response's X-RateLimit-* headers describe (none when the store was unreachable). */
export function windowOf(result: AuthResult): RateView | undefined {
  return result.ok || result.code !== 'UNAVAILABLE' ? result.rate : undefined;
}

/** A refused credential counts against its client's IP: 401 while under the guard, 429 past it. */
async function refuse(
  deps: AuthDeps,
  ip: string,
  code: 'UNAUTHORIZED' | 'KEY_EXPIRED',
  owner?: KeyOwner,
): Promise<AuthResult> {
  const guard = await deps.guard.count(ip);
  if (guard.limited)
    return { ok: false, code: 'RATE_LIMITED', rate: guard.rate, retryAfter: guard.retryAfter };
  return { ok: false, code, rate: guard.rate, owner };
}

/**
 * The one authentication pipeline, cheapest rejection first:
 *   bearer parse + key shape (no hashing) → key record from memory by the key's hash (known, or
 *   remembered as unknown) → only on a miss: the key's checksum (typos and made-up keys go no
 *   further), then the store → unknown/revoked/expired: counted against the client's address →
 *   a place among the account's requests in flight → revocation and both windows in one Redis
 *   call → admitted with the window the headers describe.
 * A valid key is judged by its account's plan alone: the address guard never sees it, so a
 * shared address that others exhausted with bad credentials never refuses it.
 * Redis down: keys that passed recently get a local limiter; anything else is UNAVAILABLE.
 * The result says what happened; http/ turns it into a status and headers.
 */
export async function authenticate(
  deps: AuthDeps,
  authorization: string | undefined,
  ip: string,
  now = Date.now(),
): Promise<AuthResult> {
  const key = bearerToken(authorization);
  if (!key || !hasApiKeyShape(key)) return refuse(deps, ip, 'UNAUTHORIZED');
  const hash = hashApiKey(key, deps.pepper);

  const cached = deps.cache.get(hash, now);
  let record: KeyRecord | undefined;
  if (cached.state === 'unknown') return refuse(deps, ip, 'UNAUTHORIZED');
  if (cached.state === 'known') {
    // Found by its hash: a key the store holds, so its checksum is right (not computed again).
    record = cached.record;
    if (cached.stale) deps.cache.load(hash, (h) => deps.keys.findKeyRecord(h)).catch(() => undefined);
  } else {
    if (!hasValidChecksum(key)) return refuse(deps, ip, 'UNAUTHORIZED');
    try {
      record = await deps.cache.load(hash, (h) => deps.keys.findKeyRecord(h));
    } catch {
      record = deps.cache.knownRecently(hash, deps.knownKeyWindowMs, now);
      if (!record) return { ok: false, code: 'UNAVAILABLE', retryAfter: 1 };
    }
  }
  if (!record) return refuse(deps, ip, 'UNAUTHORIZED');
  const owner = { accountId: record.accountId, keyId: record.keyId };
  // A revoked key gets the 401 an unknown key gets (the spec's one message for an invalid key);
  // its owner still sees the refusal in the key's usage.
  if (record.revoked) return refuse(deps, ip, 'UNAUTHORIZED', owner);
  if (record.expiresAt !== null && record.expiresAt <= now) return refuse(deps, ip, 'KEY_EXPIRED', owner);

  const { accountId } = record;
  // Before the windows: a request refused here was never sent on, so it uses none of the plan.
  if (!deps.inFlight.tryAcquire(accountId)) {
    return {
      ok: false,
      code: 'TOO_MANY_IN_FLIGHT',
      rate: deps.inFlight.rateOf(accountId, record.perMinute, now),
      retryAfter: 1,
      limit: deps.inFlight.max,
      owner,
    };
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    deps.inFlight.release(accountId);
  };
  const subject = { subject: accountId, perMinute: record.perMinute, perDay: record.perDay };
  let decision: KeyDecision;
  try {
    decision = await deps.limiter.checkKey(subject, record.keyId, now);
  } catch {
    if (!deps.cache.knownRecently(hash, deps.knownKeyWindowMs, now)) {
      release();
      return { ok: false, code: 'UNAVAILABLE', retryAfter: 1 };
    }
    decision = deps.fallback.check(subject, now);
  }
  if (decision.outcome === 'revoked') {
    release();
    deps.cache.markRevoked(hash);
    return refuse(deps, ip, 'UNAUTHORIZED', owner);
  }
  const rate = rateView(decision.minute, decision.day);
  deps.inFlight.noteRate(accountId, rate);
  if (decision.outcome === 'limited') {
    release();
    return {
      ok: false,
      code: 'RATE_LIMITED',
      rate,
      retryAfter: retryAfterSeconds(decision.minute, decision.day, now),
      owner,
    };
  }
  deps.cache.markAllowed(hash, now);
  deps.onKeyUsed(record.keyId);
  const caps = planCaps(
    { max_webhooks: record.maxWebhooks, max_streams: record.maxStreams },
    deps.capDefaults,
  );
  return { ok: true, accountId, keyId: record.keyId, rate, expiresAt: record.expiresAt, caps, release };
}
