import type { Statistics, StatsQuery } from '@signal/contracts';
import type { ProjectionRepository } from '../data/projection.repository';
import type { StatsCache } from './stats-cache';
import { periodStart, toStatistics } from './statistics';

/** Story: cached answer if fresh → else group by type and find the best ROI → cache → answer. */
export async function getStats(
  repository: ProjectionRepository,
  cache: StatsCache,
  query: StatsQuery,
): Promise<Statistics> {
  const period = query.period ?? 'all';
  const key = `${query.type ?? '*'}:${period}`;
  const cached = await cache.get(key);
  if (cached.stats) return cached.stats;
  const since = periodStart(period);
  const [rows, best] = await Promise.all([
    repository.groupByType(query.type, since),
    repository.bestRoi(query.type, since),
  ]);
  const stats = toStatistics(rows, best);
  await cache.set(key, cached.gen, stats);
  return stats;
}
