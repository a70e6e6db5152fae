import type { SignalSnapshot } from '@signal/contracts';
import type { ProjectedSignal } from '../data/projection.model';
import type { ProjectionRepository } from '../data/projection.repository';
import type { StatsAggregates } from '../data/stats-aggregates';
import type { StatsCache } from './stats-cache';

export function toProjection(s: SignalSnapshot): ProjectedSignal {
  return {
    _id: s.id,
    type: s.type,
    status: s.performance.status,
    is_winner: s.performance.status === 'winner' ? 1 : 0,
    roi: s.performance.roi,
    created_at: new Date(s.created_at),
    version: s.version,
  };
}

export interface ProjectDeps {
  repository: ProjectionRepository;
  aggregates: StatsAggregates;
  cache: StatsCache;
}

/**
 * Story: every signal.* event carries the whole snapshot → keep it in the projection if newer
 * (MongoDB, the source of truth) → apply the difference to the aggregates (Redis, version-
 * guarded on its own, so a redelivery after a Redis failure still lands) → expire the
 * fallback path's cached answers. A failure throws: the consumer retries the event.
 */
export async function projectSignal(deps: ProjectDeps, snapshot: SignalSnapshot): Promise<boolean> {
  const projected = toProjection(snapshot);
  const changed = await deps.repository.apply(projected);
  await deps.aggregates.apply([projected]);
  deps.aggregates.model.observeLag(Date.parse(snapshot.updated_at));
  if (changed) await deps.cache.invalidate();
  return changed;
}
