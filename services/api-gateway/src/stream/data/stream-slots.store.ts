import { pipelineEach, RedisScript, type RedisClient } from '@signal/service-kit';
import { SLOT_TTL_MS, type StreamSlots } from '../domain/open-streams';

/**
 * An account's open streams as a sorted set of stream ids scored by when each lapses, next to
 * its rate windows (same hash tag). Taking a slot drops lapsed ones, counts and adds in one
 * atomic call, so concurrent opens on any number of gateways never pass the cap.
 * ARGV: now, lapse time, max, stream id. Reply: 0 taken, else how many are open.
 */
const ACQUIRE = new RedisScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local open = redis.call('ZCARD', KEYS[1])
if open >= tonumber(ARGV[3]) then return open end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ${SLOT_TTL_MS})
return 0
`);

export class StreamSlotStore implements StreamSlots {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = '',
  ) {}

  private key(accountId: string): string {
    return `${this.prefix}{${accountId}}:streams`;
  }

  async acquire(accountId: string, streamId: string, max: number, now: number) {
    const reply = await ACQUIRE.run(
      this.redis,
      [this.key(accountId)],
      [now, now + SLOT_TTL_MS, max, streamId],
    );
    const open = Number(reply);
    return open === 0 ? ({ ok: true } as const) : ({ ok: false, open } as const);
  }

  async renew(slots: ReadonlyArray<{ accountId: string; streamId: string }>, now: number): Promise<void> {
    await pipelineEach(
      this.redis,
      slots,
      (s) => this.key(s.accountId),
      (pipeline, s) =>
        pipeline
          .zadd(this.key(s.accountId), 'XX', now + SLOT_TTL_MS, s.streamId)
          .pexpire(this.key(s.accountId), SLOT_TTL_MS),
    );
  }

  async release(accountId: string, streamId: string): Promise<void> {
    await this.redis.zrem(this.key(accountId), streamId);
  }
}
