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

/** Streams renewed per ZADD: a command's arguments stay a few KB. */
const RENEW_BATCH = 500;

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
    // One ZADD per account (per RENEW_BATCH of its streams), not one per stream: a gateway holding
    // thousands of one account's streams renews them in a few commands, not a burst of thousands
    // that holds its event loop (and the deliveries waiting on it) every KEEP_EVERY_MS.
    const byAccount = new Map<string, string[]>();
    for (const { accountId, streamId } of slots) {
      const ids = byAccount.get(accountId);
      if (ids) ids.push(streamId);
      else byAccount.set(accountId, [streamId]);
    }
    const batches: Array<{ key: string; ids: string[] }> = [];
    for (const [accountId, ids] of byAccount)
      for (let i = 0; i < ids.length; i += RENEW_BATCH)
        batches.push({ key: this.key(accountId), ids: ids.slice(i, i + RENEW_BATCH) });
    const lapsesAt = now + SLOT_TTL_MS;
    await pipelineEach(
      this.redis,
      batches,
      (b) => b.key,
      (pipeline, b) =>
        pipeline.zadd(b.key, 'XX', ...b.ids.flatMap((id) => [lapsesAt, id])).pexpire(b.key, SLOT_TTL_MS),
    );
  }

  async release(accountId: string, streamId: string): Promise<void> {
    await this.redis.zrem(this.key(accountId), streamId);
  }
}
