import type { SignalSnapshot } from '@signal/contracts';
import type { ProjectedSignal } from '../data/projection.model';
import type { ProjectionRepository } from '../data/projection.repository';
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

/** Every signal.* event carries the whole snapshot: keep it if newer, and expire cached answers. */
export async function projectSignal(
  repository: ProjectionRepository,
  cache: StatsCache,
  snapshot: SignalSnapshot,
): Promise<boolean> {
  const changed = await repository.apply(toProjection(snapshot));
  if (changed) await cache.invalidate();
  return changed;
}
