import { AppError } from '@signal/service-kit';
import type { AccountRepository } from '../data/account.repository';
import { hashApiKey, isWellFormedApiKey } from './api-key';
import type { KeyCache, KeyRecord } from './key-cache';
import {
  LocalFallbackLimiter,
  retryAfterSeconds,
  tightestWindow,
  type LimitDecision,
  type LimitSubject,
  type RateLimiter,
  type WindowState,
} from './rate-limiter';

export interface AuthDeps {
  repository: AccountRepository;
  cache: KeyCache;
  limiter: RateLimiter;
  fallback: LocalFallbackLimiter;
  pepper: string;
  ipPerMinute: number;
  knownKeyWindowMs: number;
  onKeyUsed: (keyId: string) => void;
}

export interface AuthResult {
  accountId: string;
  keyId: string;
  headers: Record<string, string>;
}

function rateHeaders(minute: WindowState, day: WindowState): Record<string, string> {
  const w = tightestWindow(minute, day);
  return {
    'X-RateLimit-Limit': String(w.limit),
    'X-RateLimit-Remaining': String(Math.max(0, w.limit - w.used)),
    'X-RateLimit-Reset': String(Math.ceil(w.resetAt)),
  };
}

function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

async function loadRecord(deps: AuthDeps, hash: string): Promise<KeyRecord | undefined> {
  const cached = deps.cache.get(hash);
  if (cached) return cached;
  const key = await deps.repository.findKeyByHash(hash);
  if (!key) return undefined;
  const account = await deps.repository.findAccount(key.account_id);
  if (!account) return undefined;
  const record: KeyRecord = {
    keyId: key._id,
    accountId: key.account_id,
    expiresAt: key.expires_at ? new Date(key.expires_at).getTime() : null,
    revoked: key.revoked_at !== null,
    perMinute: account.plan.per_minute,
    perDay: account.plan.per_day,
  };
  deps.cache.set(hash, record);
  return record;
}

function isRedisDown(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return /Stream isn't writeable|enableOfflineQueue|Connection is closed|ECONNREFUSED|Command timed out|connect ETIMEDOUT|MaxRetriesPerRequest/i.test(
    msg,
  );
}

/** Counts an anonymous (or failed) request against its IP, then answers 401 — or 429 past the guard. */
async function rejectAnonymous(deps: AuthDeps, ip: string, error: AppError): Promise<never> {
  const subject: LimitSubject = {
    subject: `ip:${ip}`,
    perMinute: deps.ipPerMinute,
    perDay: Number.MAX_SAFE_INTEGER,
  };
  let decision: LimitDecision;
  try {
    decision = await deps.limiter.check(subject);
  } catch (err) {
    if (!isRedisDown(err)) throw err;
    decision = deps.fallback.check(subject);
  }
  if (decision.outcome === 'revoked') throw error;
  const headers = rateHeaders(decision.minute, decision.day);
  if (decision.outcome === 'limited') {
    throw new AppError('RATE_LIMIT_EXCEEDED', undefined, {
      retryAfter: retryAfterSeconds(decision.minute, decision.day),
      headers,
    });
  }
  throw new AppError(error.code, error.message, { headers });
}

/**
 * Story: read the bearer key → reject malformed ones before any lookup → find its record
 * (memory, else MongoDB) → refuse unknown, revoked or expired keys with the same 401 →
 * check revocation and both rate windows in one Redis call → admit with the headers.
 * Redis down: keys that passed recently get a local limiter; anything else gets a 503.
 */
export async function authenticate(
  deps: AuthDeps,
  authorization: string | undefined,
  ip: string,
): Promise<AuthResult> {
  // Built only when needed: an Error captures a stack trace, too costly for every request.
  const unauthorized = () => new AppError('UNAUTHORIZED');
  const key = bearerToken(authorization);
  if (!key || !isWellFormedApiKey(key)) return rejectAnonymous(deps, ip, unauthorized());

  const hash = hashApiKey(key, deps.pepper);
  let record: KeyRecord | undefined;
  try {
    record = await loadRecord(deps, hash);
  } catch (err) {
    record = deps.cache.knownRecently(hash, deps.knownKeyWindowMs);
    if (!record) throw new AppError('SERVICE_UNAVAILABLE', undefined, { cause: err, retryAfter: 1 });
  }
  if (!record || record.revoked) return rejectAnonymous(deps, ip, unauthorized());
  if (record.expiresAt !== null && record.expiresAt <= Date.now()) {
    return rejectAnonymous(deps, ip, new AppError('KEY_EXPIRED'));
  }

  const subject: LimitSubject = {
    subject: record.accountId,
    keyId: record.keyId,
    perMinute: record.perMinute,
    perDay: record.perDay,
  };
  let decision: LimitDecision;
  try {
    decision = await deps.limiter.check(subject);
  } catch (err) {
    if (!isRedisDown(err)) throw err;
    if (!deps.cache.knownRecently(hash, deps.knownKeyWindowMs)) {
      throw new AppError('SERVICE_UNAVAILABLE', undefined, { cause: err, retryAfter: 1 });
    }
    decision = deps.fallback.check(subject);
  }
  if (decision.outcome === 'revoked') {
    deps.cache.set(hash, { ...record, revoked: true });
    return rejectAnonymous(deps, ip, unauthorized());
  }
  const headers = rateHeaders(decision.minute, decision.day);
  if (decision.outcome === 'limited') {
    throw new AppError('RATE_LIMIT_EXCEEDED', undefined, {
      retryAfter: retryAfterSeconds(decision.minute, decision.day),
      headers,
    });
  }
  deps.cache.markAllowed(hash);
  deps.onKeyUsed(record.keyId);
  return { accountId: record.accountId, keyId: record.keyId, headers };
}
