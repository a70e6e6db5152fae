import type { SignalSnapshot } from '@signal/contracts';
import type { AggregatesStore, ProjectionStore, StatsResponseCache } from './ports';
import { toProjection, type ProjectedSignal } from './projection';

export interface ProjectDeps {
  repository: Pick<ProjectionStore, 'applyMany'>;
  aggregates: Pick<AggregatesStore, 'apply' | 'model'>;
  cache: Pick<StatsResponseCache, 'invalidate'>;
}

/** Of several states of one signal, the newest (only it can count). */
function newestPerSignal(snapshots: readonly SignalSnapshot[]): ProjectedSignal[] {
  const newest = new Map<string, ProjectedSignal>();
  for (const s of snapshots) {
    const seen = newest.get(s.id);
    if (!seen || seen.version < s.version) newest.set(s.id, toProjection(s));
  }
  return [...newest.values()];
}

/**
 * Every signal.* event carries the whole snapshot; the consumer hands them over by the
 * batch (`Batcher`) → the newest state of each signal is kept in the projection if newer than
 * the stored one (MongoDB, the source of truth; first versions in one insert) → the
 * differences are applied to the aggregates (Redis, version-guarded on their own, so a
 * redelivery after a Redis failure still lands) → the fallback path's cached responses expire
 * once. A failure throws: every event of the batch is retried.
 */
export async function projectSignals(
  deps: ProjectDeps,
  snapshots: readonly SignalSnapshot[],
): Promise<number> {
  if (snapshots.length === 0) return 0;
  const projected = newestPerSignal(snapshots);
  const changed = await deps.repository.applyMany(projected);
  await deps.aggregates.apply(projected);
  const lastWrite = Math.max(...snapshots.map((s) => Date.parse(s.updated_at)));
  deps.aggregates.model.observeLag(lastWrite);
  if (changed.size > 0) await deps.cache.invalidate();
  return changed.size;
}
