/**
 * Rate-limit rules (pure) and the port of the shared limiter. Fixed windows: the UTC minute and
 * the UTC day. The Redis implementation is data/rate-limit.store.ts.
 */
export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export interface WindowState {
  limit: number;
  used: number;
  /** Unix seconds when this window ends. */
  resetAt: number;
}

export interface WindowDecision {
  outcome: 'allowed' | 'limited';
  minute: WindowState;
  day: WindowState;
}
export type KeyDecision = WindowDecision | { outcome: 'revoked' };

export interface LimitSubject {
  /** `acc_…` for accounts, `ip:…` for anonymous clients, `session:acc_…` for dashboard sessions. */
  subject: string;
  perMinute: number;
  perDay: number;
}

/** The shared limiter: checks both windows (and a key's revocation) and counts only when both have room. */
export interface SharedLimiter {
  /** An API key's request: its revocation and its account's windows, in one call. */
  checkKey(subject: LimitSubject, keyId: string, now?: number): Promise<KeyDecision>;
  /** Any other subject's request (an IP, a session). */
  count(subject: LimitSubject, now?: number): Promise<WindowDecision>;
  /** The subject's windows as its next request would find them, counting nothing. */
  peek(subject: LimitSubject, now?: number): Promise<WindowDecision>;
  markRevoked(accountId: string, keyId: string): Promise<void>;
  setPlan(accountId: string, perMinute: number, perDay: number): Promise<void>;
}

/** What the X-RateLimit-* headers say: the window closest to exhaustion. */
export interface RateView {
  limit: number;
  remaining: number;
  /** Unix seconds. */
  reset: number;
}

export function rateView(minute: WindowState, day: WindowState): RateView {
  const w = day.limit - day.used < minute.limit - minute.used ? day : minute;
  return { limit: w.limit, remaining: Math.max(0, w.limit - w.used), reset: Math.ceil(w.resetAt) };
}

/** When (ms) a request can pass again: when every exhausted window has reset. */
export function passesAgainAt(minute: WindowState, day: WindowState): number {
  const exhausted = [minute, day].filter((w) => w.used >= w.limit);
  return Math.max(...exhausted.map((w) => w.resetAt * 1000));
}

/** Seconds until a request can pass again, rounded up (at least 1): the Retry-After. */
export function retryAfterSeconds(minute: WindowState, day: WindowState, now = Date.now()): number {
  return Math.max(1, Math.ceil((passesAgainAt(minute, day) - now) / 1000));
}

export const minuteWindowEnd = (now: number): number => (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS;
export const dayWindowEnd = (now: number): number => (Math.floor(now / DAY_MS) + 1) * DAY_MS;

/**
 * Used while the shared limiter does not respond: a per-instance fixed window at the subject's
 * rates, so known clients keep working (slightly generous across instances).
 */
export class LocalFallbackLimiter {
  private readonly counters = new Map<string, { window: number; count: number }>();

  constructor(private readonly maxSubjects = 100_000) {}

  check(s: LimitSubject, now = Date.now()): WindowDecision {
    return this.decide(s, now, true);
  }

  /** The subject's window as `check` would find it, counting nothing. */
  peek(s: LimitSubject, now = Date.now()): WindowDecision {
    return this.decide(s, now, false);
  }

  private decide(s: LimitSubject, now: number, counts: boolean): WindowDecision {
    const minuteWindow = Math.floor(now / MINUTE_MS);
    const c = this.counters.get(s.subject);
    const current = c && c.window === minuteWindow ? c : { window: minuteWindow, count: 0 };
    const allowed = current.count < s.perMinute;
    if (!counts) return windowDecision(allowed, s, current.count, 0, now);
    if (allowed) current.count += 1;
    if (!c && this.counters.size >= this.maxSubjects) this.counters.clear();
    this.counters.set(s.subject, current);
    return windowDecision(allowed, s, current.count, 0, now);
  }
}

/** Both windows of a subject with these counts, and whether its request had room. */
export function windowDecision(
  allowed: boolean,
  s: LimitSubject,
  minuteUsed: number,
  dayUsed: number,
  now: number,
): WindowDecision {
  return {
    outcome: allowed ? 'allowed' : 'limited',
    minute: { limit: s.perMinute, used: minuteUsed, resetAt: minuteWindowEnd(now) / 1000 },
    day: { limit: s.perDay, used: dayUsed, resetAt: dayWindowEnd(now) / 1000 },
  };
}
