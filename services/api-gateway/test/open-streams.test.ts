import { randomBytes } from 'node:crypto';
import { connectRedis, deleteKeysMatching, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger } from '@signal/test-kit';
import { RateLimitStore } from '../src/edge/data/rate-limit.store';
import { StreamSlotStore } from '../src/stream/data/stream-slots.store';
import { OpenStreams, type OpenStream, type StreamEnd } from '../src/stream/domain/open-streams';

/**
 * Open streams against the shared store: a key rolled while its streams are open ends them when
 * its overlap does, as its requests end then. The test runs each check itself, with its clock.
 */
let redis: RedisClient;
let store: RateLimitStore;
const prefix = `t:ost:${randomBytes(4).toString('hex')}:`;
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);

beforeAll(async () => {
  redis = await connectRedis(infraUrls().redisUrl, silentLogger, 3000);
  store = new RateLimitStore(redis, prefix);
});
afterAll(async () => {
  await deleteKeysMatching(redis, `${prefix}*`);
  redis.disconnect();
});

function stream(accountId: string, keyId: string, expiresAt: number | null = null) {
  const ends: StreamEnd[] = [];
  const s: OpenStream = { accountId, keyId, expiresAt, stop: (reason) => ends.push(reason) };
  return { s, ends };
}

describe('open streams', () => {
  it('when a key is rolled with an overlap while its streams are open, then they end when the overlap does, and other keys’ streams go on', async () => {
    const streams = new OpenStreams(new StreamSlotStore(redis, prefix), store, undefined, 0);
    const rolled = stream('acc_roll', 'key_old');
    const other = stream('acc_roll', 'key_other');
    await streams.admit('st_1', rolled.s, 5, NOW);
    await streams.admit('st_2', other.s, 5, NOW);
    try {
      await streams.check(NOW);
      expect(rolled.ends).toEqual([]);

      await store.markEnd('acc_roll', 'key_old', new Date(NOW + 60_000));
      await streams.check(NOW + 1_000);
      // Still within the overlap: the stream goes on, with the key's new end.
      expect(rolled.ends).toEqual([]);
      expect(rolled.s.expiresAt).toBe(NOW + 60_000);

      await streams.check(NOW + 60_000);
      expect(rolled.ends).toEqual(['expired']);
      expect(other.ends).toEqual([]);
    } finally {
      await streams.closed('st_1');
      await streams.closed('st_2');
    }
  });

  it('when a roll is taken back, then a stream of the key is not ended by it; an earlier expiry of its own still holds', async () => {
    const streams = new OpenStreams(new StreamSlotStore(redis, prefix), store, undefined, 0);
    await store.markEnd('acc_back', 'key_back', new Date(NOW + 60_000));
    await store.clearEnd('acc_back', 'key_back');
    const kept = stream('acc_back', 'key_back');
    const own = stream('acc_back', 'key_own', NOW + 10_000);
    await store.markEnd('acc_back', 'key_own', new Date(NOW + 60_000));
    await streams.admit('st_3', kept.s, 5, NOW);
    await streams.admit('st_4', own.s, 5, NOW);
    try {
      await streams.check(NOW + 120_000);
      expect(kept.ends).toEqual([]);
      expect(kept.s.expiresAt).toBeNull();
      // A later end from a roll never extends a key's own expiry.
      expect(own.s.expiresAt).toBe(NOW + 10_000);
      expect(own.ends).toEqual(['expired']);
    } finally {
      await streams.closed('st_3');
      await streams.closed('st_4');
    }
  });
});
