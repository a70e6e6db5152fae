import { infraUrls, uniqueName } from '@signal/test-kit';
import { clusterOf, redisClient, type RedisClient } from '@signal/service-kit';

/** The keys matching `pattern` on every master (on a Redis Cluster, KEYS answers for one node). */
async function keysOf(redis: RedisClient, pattern: string): Promise<string[]> {
  const servers = clusterOf(redis)?.nodes('master') ?? [redis];
  return (await Promise.all(servers.map((s) => s.keys(pattern)))).flat();
}
import { StatsCache } from '../src/data/stats-cache';
import { toStatistics } from '../src/domain/statistics';

/** The hash tag of a key as Redis Cluster reads it: the first non-empty `{…}`, else the key. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('StatsCache against Redis', () => {
  let redis: RedisClient;
  const prefix = `${uniqueName('t-stats-cache')}:`;
  beforeAll(() => {
    // Not the services' fail-fast client (1 s command timeout, no offline queue): on a loaded CI
    // machine a command can wait longer than that, and the cache then rightly answers "no
    // generation" (-1), which is its fallback, not the rule under test here.
    redis = redisClient(infraUrls().redisUrl, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    const keys = await keysOf(redis, `${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('when responses are cached and invalidated, then every key shares the {statscache} hash tag (one slot for the MGET)', async () => {
    const cache = new StatsCache(redis, prefix, 60_000, 0);
    const stats = toStatistics([{ _id: 'new', total: 2, winners: 1, roi_sum: 10 }], 10);
    expect(await cache.get('all')).toEqual({ gen: 0 });
    await cache.set('all', 0, stats);
    await cache.set('24h', 0, stats);
    await cache.invalidate();

    const keys = (await keysOf(redis, `${prefix}*`)).sort();
    expect(keys).toEqual([
      `${prefix}stats:{statscache}:24h`,
      `${prefix}stats:{statscache}:all`,
      `${prefix}stats:{statscache}:gen`,
    ]);
    expect(new Set(keys.map(hashTag))).toEqual(new Set(['statscache']));
  });

  it('when the generation moves on, then an older response is stale; a current one is served', async () => {
    const cache = new StatsCache(redis, `${prefix}b:`, 60_000, 0);
    const stats = toStatistics([], undefined);
    const { gen } = await cache.get('7d');
    await cache.set('7d', gen, stats);
    expect(await cache.get('7d')).toEqual({ stats, gen });
    await cache.invalidate();
    expect(await cache.get('7d')).toEqual({ gen: gen + 1 });
  });
});
