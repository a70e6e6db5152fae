import type Redis from 'ioredis';

/**
 * Both windows (minute and UTC day) are checked and, only if both have room, counted — in
 * one atomic Lua call, so concurrent requests on any number of gateway instances can never
 * overshoot and a rejected request counts against nothing. The revoked-key set is checked in
 * the same call, so a revocation applies to the very next request everywhere.
 * All keys of one account share the hash tag {acc} → one Redis Cluster slot.
 */
const SCRIPT = `
if ARGV[1] ~= '' and redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then
  return {-1, 0, 0, 0, 0}
end
local per_minute = tonumber(redis.call('HGET', KEYS[4], 'per_minute') or ARGV[2])
local per_day = tonumber(redis.call('HGET', KEYS[4], 'per_day') or ARGV[3])
local m = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(redis.call('GET', KEYS[2]) or '0')
if m >= per_minute or d >= per_day then
  return {0, m, d, per_minute, per_day}
end
m = redis.call('INCR', KEYS[1])
if m == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
d = redis.call('INCR', KEYS[2])
if d == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
return {1, m, d, per_minute, per_day}
`;

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export interface WindowState {
  limit: number;
  used: number;
  /** Unix seconds when this window ends. */
  resetAt: number;
}

export type LimitDecision =
  { outcome: 'allowed' | 'limited'; minute: WindowState; day: WindowState } | { outcome: 'revoked' };

export interface LimitSubject {
  /** Hash-tagged id: `acc_…` for accounts, `ip:…` for anonymous clients. */
  subject: string;
  keyId?: string;
  perMinute: number;
  perDay: number;
}

type RedisWithScript = Redis & {
  signalRateLimit(k1: string, k2: string, k3: string, k4: string, ...args: string[]): Promise<number[]>;
};

export class RateLimiter {
  private readonly redis: RedisWithScript;

  constructor(
    redis: Redis,
    private readonly prefix = '',
  ) {
    const withScript = redis as unknown as RedisWithScript;
    if (typeof withScript.signalRateLimit !== 'function')
      redis.defineCommand('signalRateLimit', { numberOfKeys: 4, lua: SCRIPT });
    this.redis = withScript;
  }

  keys(subject: string) {
    const tag = `${this.prefix}{${subject}}`;
    return {
      revoked: `${tag}:revoked`,
      plan: `${tag}:plan`,
      minute: (w: number) => `${tag}:m:${w}`,
      day: (w: number) => `${tag}:d:${w}`,
    };
  }

  async check(s: LimitSubject, now = Date.now()): Promise<LimitDecision> {
    const minuteWindow = Math.floor(now / MINUTE_MS);
    const dayWindow = Math.floor(now / DAY_MS);
    const k = this.keys(s.subject);
    const [code, m, d, perMinute, perDay] = await this.redis.signalRateLimit(
      k.minute(minuteWindow),
      k.day(dayWindow),
      k.revoked,
      k.plan,
      s.keyId ?? '',
      String(s.perMinute),
      String(s.perDay),
      String(MINUTE_MS + 5000),
      String(DAY_MS + 60_000),
    );
    if (code === -1) return { outcome: 'revoked' };
    return {
      outcome: code === 1 ? 'allowed' : 'limited',
      minute: { limit: perMinute!, used: m!, resetAt: ((minuteWindow + 1) * MINUTE_MS) / 1000 },
      day: { limit: perDay!, used: d!, resetAt: ((dayWindow + 1) * DAY_MS) / 1000 },
    };
  }

  async markRevoked(accountId: string, keyId: string): Promise<void> {
    await this.redis.sadd(this.keys(accountId).revoked, keyId);
  }

  async setPlan(accountId: string, perMinute: number, perDay: number): Promise<void> {
    await this.redis.hset(this.keys(accountId).plan, { per_minute: perMinute, per_day: perDay });
  }
}

/** The window closest to exhaustion is the one the X-RateLimit-* headers describe. */
export function tightestWindow(minute: WindowState, day: WindowState): WindowState {
  const mLeft = minute.limit - minute.used;
  const dLeft = day.limit - day.used;
  return dLeft < mLeft ? day : minute;
}

/** Seconds until a request can pass again: until every exhausted window has reset. */
export function retryAfterSeconds(minute: WindowState, day: WindowState, now = Date.now()): number {
  const exhausted = [minute, day].filter((w) => w.used >= w.limit);
  const until = Math.max(...exhausted.map((w) => w.resetAt * 1000));
  return Math.max(1, Math.ceil((until - now) / 1000));
}

/**
 * Used while Redis is down, for keys that authenticated recently: a per-instance fixed
 * window at the plan's rates, so known clients keep working (slightly generous across
 * instances) and nothing unknown gets in.
 */
export class LocalFallbackLimiter {
  private readonly counters = new Map<string, { window: number; count: number }>();

  check(s: LimitSubject, now = Date.now()): LimitDecision {
    const minuteWindow = Math.floor(now / MINUTE_MS);
    const c = this.counters.get(s.subject);
    const current = c && c.window === minuteWindow ? c : { window: minuteWindow, count: 0 };
    const allowed = current.count < s.perMinute;
    if (allowed) current.count += 1;
    this.counters.set(s.subject, current);
    const minute = {
      limit: s.perMinute,
      used: current.count,
      resetAt: ((minuteWindow + 1) * MINUTE_MS) / 1000,
    };
    const day = { limit: s.perDay, used: 0, resetAt: ((Math.floor(now / DAY_MS) + 1) * DAY_MS) / 1000 };
    return { outcome: allowed ? 'allowed' : 'limited', minute, day };
  }
}
