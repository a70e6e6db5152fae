import { RedisScript } from '@signal/service-kit';
import type Redis from 'ioredis';
import {
  DAY_MS,
  MINUTE_MS,
  type KeyDecision,
  type LimitSubject,
  type SharedLimiter,
  type WindowDecision,
} from '../domain/rate-limit';

/**
 * Both windows (minute and UTC day) are checked and, only if both have room, counted — in
 * one atomic Lua call, so concurrent requests on any number of gateway instances can never
 * overshoot and a rejected request counts against nothing. The revoked-key set is checked in
 * the same call, so a revocation applies to the very next request everywhere.
 * All keys of one account share the hash tag {acc} → one Redis Cluster slot.
 */
const CHECK = new RedisScript(`
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
`);

const MINUTE_TTL = String(MINUTE_MS + 5000);
const DAY_TTL = String(DAY_MS + 60_000);

function isReply(value: unknown): value is [number, number, number, number, number] {
  return Array.isArray(value) && value.length === 5 && value.every((v) => typeof v === 'number');
}

export class RateLimitStore implements SharedLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = '',
  ) {}

  private tag(subject: string): string {
    return `${this.prefix}{${subject}}`;
  }

  checkKey(s: LimitSubject, keyId: string, now = Date.now()): Promise<KeyDecision> {
    return this.run(s, keyId, now);
  }

  async count(s: LimitSubject, now = Date.now()): Promise<WindowDecision> {
    const decision = await this.run(s, '', now);
    if (decision.outcome === 'revoked') throw new Error('a subject without a key cannot be revoked');
    return decision;
  }

  private async run(s: LimitSubject, keyId: string, now: number): Promise<KeyDecision> {
    const minuteWindow = Math.floor(now / MINUTE_MS);
    const dayWindow = Math.floor(now / DAY_MS);
    const tag = this.tag(s.subject);
    const reply = await CHECK.run(
      this.redis,
      [`${tag}:m:${minuteWindow}`, `${tag}:d:${dayWindow}`, `${tag}:revoked`, `${tag}:plan`],
      [keyId, s.perMinute, s.perDay, MINUTE_TTL, DAY_TTL],
    );
    if (!isReply(reply)) throw new Error('rate limit script answered an unexpected shape');
    const [code, m, d, perMinute, perDay] = reply;
    if (code === -1) return { outcome: 'revoked' };
    return {
      outcome: code === 1 ? 'allowed' : 'limited',
      minute: { limit: perMinute, used: m, resetAt: ((minuteWindow + 1) * MINUTE_MS) / 1000 },
      day: { limit: perDay, used: d, resetAt: ((dayWindow + 1) * DAY_MS) / 1000 },
    };
  }

  async markRevoked(accountId: string, keyId: string): Promise<void> {
    await this.redis.sadd(`${this.tag(accountId)}:revoked`, keyId);
  }

  async setPlan(accountId: string, perMinute: number, perDay: number): Promise<void> {
    await this.redis.hset(`${this.tag(accountId)}:plan`, { per_minute: perMinute, per_day: perDay });
  }
}
