import { RedisScript, type RedisClient } from '@signal/service-kit';
import {
  type LoginAttempts,
  type LoginSubject,
  type Reservation,
  type Standing,
  standingOf,
} from '../domain/login-throttle';

/**
 * Reserves an attempt: refused (nothing counted) while the subject is past its free failures,
 * `until` is ahead and the wait is enforced, else one more failure and the wait it earns (within
 * the free failures there is no wait: an `until` a concurrent attempt stamped with a later clock
 * refuses nothing), in one atomic call, so concurrent attempts on any
 * number of gateways each see the ones before them.
 * The wait is domain/login-throttle.ts's waitAfter. ARGV: now, free failures, max wait, memory
 * (ms), enforce (1/0). Reply: {0, failures before this one} reserved, else {1, the wait left in ms}.
 */
const RESERVE = new RedisScript(`
local now = tonumber(ARGV[1])
local free, max_wait = tonumber(ARGV[2]), tonumber(ARGV[3])
local until_at = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
local before = tonumber(redis.call('HGET', KEYS[1], 'failures') or '0')
if ARGV[5] == '1' and before > free and until_at > now then return {1, until_at - now} end
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local wait = 0
if failures > free then wait = math.min(max_wait, 1000 * 2 ^ math.min(30, failures - free - 1)) end
redis.call('HSET', KEYS[1], 'until', now + wait, 'last', now, 'prev', until_at)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {0, failures - 1}
`);

/**
 * Takes one reservation back: one failure fewer, and the wait that count earns from the last
 * reservation, but never past the wait the subject had before the last reservation (`prev`): a
 * success must neither leave the network waiting for a failure it never made nor restart a wait
 * it came in under (the owner's login elsewhere lengthening its email's wait).
 * ARGV: free failures, max wait.
 */
const RELEASE = new RedisScript(`
local failures = tonumber(redis.call('HGET', KEYS[1], 'failures') or '0')
if failures <= 1 then redis.call('DEL', KEYS[1]) return 0 end
failures = redis.call('HINCRBY', KEYS[1], 'failures', -1)
local free, max_wait = tonumber(ARGV[1]), tonumber(ARGV[2])
local wait = 0
if failures > free then wait = math.min(max_wait, 1000 * 2 ^ math.min(30, failures - free - 1)) end
local last = tonumber(redis.call('HGET', KEYS[1], 'last') or '0')
local until_at = last + wait
local prev = tonumber(redis.call('HGET', KEYS[1], 'prev') or '')
if prev ~= nil and prev < until_at then until_at = prev end
redis.call('HSET', KEYS[1], 'until', until_at)
return 0
`);

/**
 * One hash per subject (`failures`, `until`, `last` and `prev`, the `until` before the last
 * reservation, in ms), expiring `memoryMs` after the last attempt.
 */
export class LoginAttemptStore implements LoginAttempts {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(s: LoginSubject): string {
    return `${this.prefix}login:{${s.key}}`;
  }

  async reserve(s: LoginSubject, now: number, enforce: boolean): Promise<Reservation> {
    const reply = await RESERVE.run(
      this.redis,
      [this.key(s)],
      [now, s.policy.free, s.policy.maxWaitMs, s.policy.memoryMs, enforce ? 1 : 0],
    );
    const [waiting, value] = Array.isArray(reply) ? reply.map(Number) : [];
    if (value === undefined || !Number.isFinite(value))
      throw new Error('unexpected reply from the login script');
    return waiting === 1 ? { ok: false, waitMs: value } : { ok: true, earlier: value };
  }

  async release(s: LoginSubject): Promise<void> {
    await RELEASE.run(this.redis, [this.key(s)], [s.policy.free, s.policy.maxWaitMs]);
  }

  async clear(s: LoginSubject): Promise<void> {
    await this.redis.del(this.key(s));
  }

  async standing(s: LoginSubject, now: number): Promise<Standing> {
    const [failures = 0, until = 0] = (await this.redis.hmget(this.key(s), 'failures', 'until')).map(Number);
    return standingOf(failures, until, s.policy, now);
  }
}
