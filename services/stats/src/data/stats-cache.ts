import type { RedisClient } from '@signal/service-kit';
import { statisticsSchema, type Statistics } from '@signal/contracts';
import { z } from 'zod';
import type { StatsResponseCache } from '../domain/ports';

const cachedSchema = z.object({ gen: z.number(), at: z.number(), stats: statisticsSchema });
type Cached = z.infer<typeof cachedSchema>;

/**
 * Responses per (type, period) in Redis. Every projected change bumps a generation counter,
 * which makes older responses stale; a stale response younger than `minFreshMs` is still served
 * (bursts of events must not turn every request into an aggregation), and none older than `ttlMs`.
 * One MGET per lookup. Redis trouble only costs the cache, never the response.
 * Every key carries the `{statscache}` hash tag, so the MGET stays in one slot behind a
 * cluster-aware proxy (no CROSSSLOT).
 */
export class StatsCache implements StatsResponseCache {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly ttlMs: number,
    private readonly minFreshMs: number,
  ) {}

  private get genKey() {
    return `${this.prefix}stats:{statscache}:gen`;
  }

  private entryKey(key: string) {
    return `${this.prefix}stats:{statscache}:${key}`;
  }

  async get(key: string, now = Date.now()): Promise<{ stats?: Statistics; gen: number }> {
    try {
      const [gen, raw] = await this.redis.mget(this.genKey, this.entryKey(key));
      const current = Number(gen ?? 0);
      if (!raw) return { gen: current };
      const cached = cachedSchema.parse(JSON.parse(raw));
      const fresh = cached.gen === current || now - cached.at < this.minFreshMs;
      return { stats: fresh && now - cached.at < this.ttlMs ? cached.stats : undefined, gen: current };
    } catch {
      return { gen: -1 };
    }
  }

  async set(key: string, gen: number, stats: Statistics): Promise<void> {
    if (gen < 0 || this.ttlMs === 0) return;
    const value: Cached = { gen, at: Date.now(), stats };
    await this.redis.set(this.entryKey(key), JSON.stringify(value), 'PX', this.ttlMs).catch(() => undefined);
  }

  async invalidate(): Promise<void> {
    await this.redis.incr(this.genKey).catch(() => undefined);
  }
}
