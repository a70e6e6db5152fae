import type { SignalSnapshot } from '@signal/contracts';
import type { AggregatesStore, ProjectionStore, StatsAnswerCache } from './ports';
import { toProjection } from './projection';

export interface ProjectDeps {
  repository: Pick<ProjectionStore, 'apply'>;
  aggregates: Pick<AggregatesStore, 'apply' | 'model'>;
  cache: Pick<StatsAnswerCache, 'invalidate'>;
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
