import type { Statistics, StatsQuery } from '@signal/contracts';
import { succeed, type LoadShedder, type Logger, type ReadLimit, type Result } from '@signal/service-kit';
import type { AggregatesStore, ProjectionStore, StatsResponseCache } from './ports';
import { periodStart, toStatistics } from './statistics';

export interface StatsReadDeps {
  aggregates: Pick<AggregatesStore, 'figures'>;
  repository: Pick<ProjectionStore, 'groupByType' | 'bestRoi'>;
  cache: StatsResponseCache;
  logger: Logger;
  /** The aggregates were incomplete or unreachable: the aggregates check should look now. */
  aggregatesMissed(): void;
  /** Bounds the aggregations MongoDB runs while the aggregates are away. */
  storeReads: LoadShedder;
}

/**
 * The figures from the incrementally kept aggregates (nothing aggregates on the request
 * path) → or, while they are rebuilt or Redis is unreachable, a cached or fresh aggregation of
 * the MongoDB projection. With a `type`, the top-level figures are that type's and `by_type`
 * still holds every type's real figures for the period.
 */
export async function getStats(
  deps: StatsReadDeps,
  query: StatsQuery,
  now = Date.now(),
): Promise<Result<Statistics, 'SERVICE_UNAVAILABLE'>> {
  const period = query.period ?? 'all';
  const since = periodStart(period, now);
  try {
    // Every type's rows (by_type always holds them all); the filter narrows the totals only.
    const figures = await deps.aggregates.figures(undefined, since, now);
    if (figures) {
      const best = query.type ? figures.rows.find((r) => r._id === query.type)?.best_roi : figures.bestRoi;
      return succeed(toStatistics(figures.rows, best, query.type));
    }
  } catch (err) {
    deps.logger.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'stats aggregates unreachable',
    );
  }
  deps.aggregatesMissed();
  // The store stops the reads at the deadline the client is answered by.
  return deps.storeReads.run((within) => aggregateFromStore(deps, query.type, period, since, within));
}

async function aggregateFromStore(
  deps: StatsReadDeps,
  type: StatsQuery['type'],
  period: string,
  since: Date | undefined,
  within: ReadLimit,
): Promise<Statistics> {
  const key = `${type ?? '*'}:${period}`;
  const cached = await deps.cache.get(key);
  if (cached.stats) return cached.stats;
  const [rows, best] = await Promise.all([
    deps.repository.groupByType(undefined, since, within),
    deps.repository.bestRoi(type, since, within),
  ]);
  const stats = toStatistics(rows, best, type);
  await deps.cache.set(key, cached.gen, stats);
  return stats;
}
