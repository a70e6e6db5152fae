import { randomBytes } from 'node:crypto';
import { connectRedis, deleteKeysMatching, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger } from '@signal/test-kit';
import { StreamSlotStore } from '../src/stream/data/stream-slots.store';
import { SLOT_TTL_MS } from '../src/stream/domain/open-streams';

/**
 * A gateway renews its streams' slots by the account, many in one command: every open slot it
 * names lapses later, whichever account and however many, and a slot freed meanwhile stays free.
 */
let redis: RedisClient;
let store: StreamSlotStore;
const prefix = `t:sss:${randomBytes(4).toString('hex')}:`;
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);

beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger, 3000);
  store = new StreamSlotStore(redis, prefix);
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('stream slots, renewed by the account', () => {
  it('when 1,201 slots of two accounts are renewed, then each lapses a TTL after the renewal, and a released one is not taken back', async () => {
    const slots = [
      ...Array.from({ length: 1200 }, (_, i) => ({ accountId: 'acc_many', streamId: `s${i}` })),
      { accountId: 'acc_one', streamId: 'only' },
    ];
    for (const s of slots) {
      const taken = await store.acquire(s.accountId, s.streamId, 10_000, NOW);
      expect(taken.ok).toBe(true);
    }
    await store.release('acc_many', 's7');

    const later = NOW + 10_000;
    await store.renew(slots, later);

    const many = await redis.zrangebyscore(`${prefix}{acc_many}:streams`, '-inf', '+inf', 'WITHSCORES');
    const scores = new Map<string, number>();
    for (let i = 0; i + 1 < many.length; i += 2) scores.set(many[i]!, Number(many[i + 1]));
    expect(scores.size).toBe(1199);
    expect(scores.has('s7')).toBe(false);
    expect([...scores.values()].every((score) => score === later + SLOT_TTL_MS)).toBe(true);
    expect(await redis.zscore(`${prefix}{acc_one}:streams`, 'only')).toBe(String(later + SLOT_TTL_MS));
    expect(await redis.pttl(`${prefix}{acc_many}:streams`)).toBeGreaterThan(0);
  });
});
