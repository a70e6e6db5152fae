import type { SignalType, Statistics } from '@signal/contracts';
import type { ReadLimit, RedisReadModel } from '@signal/service-kit';
import type { ProjectedSignal } from './projection';

/**
 * What the stats use cases need from outside, declared here and implemented in `data/`: the
 * projection (MongoDB, the source of truth), the incremental aggregates and the response cache
 * (Redis).
 */

/** Counts, winners and ROI sum of one signal type. */
export interface GroupRow {
  _id: SignalType;
  total: number;
  winners: number;
  roi_sum: number;
  /** The type's highest ROI, where the source keeps it per type (the aggregates). */
  best_roi?: number;
}

export interface ProjectionStore {
  /** Stores a signal state if it is newer than the stored one; returns whether anything changed. */
  apply(doc: ProjectedSignal): Promise<boolean>;
  /** The same for many states (at most one per signal); returns the ids whose state changed. */
  applyMany(docs: ProjectedSignal[]): Promise<Set<string>>;
  /** Rows per type for created_at > since (all time without `since`), read `within` its limit. */
  groupByType(type: SignalType | undefined, since: Date | undefined, within?: ReadLimit): Promise<GroupRow[]>;
  /** The highest ROI for created_at > since, if any signal is there, read `within` its limit. */
  bestRoi(
    type: SignalType | undefined,
    since: Date | undefined,
    within?: ReadLimit,
  ): Promise<number | undefined>;
  /** Every projected signal once, in batches (the aggregates' rebuild). */
  streamAll(batchSize: number): AsyncGenerator<ProjectedSignal[]>;
}

export interface AggregatesStore {
  /** Version-guarded; returns how many signals changed anything. */
  apply(signals: ProjectedSignal[]): Promise<number>;
  /** Rows per type and the best ROI for created_at > since; undefined while incomplete. */
  figures(
    type: SignalType | undefined,
    since: Date | undefined,
    now?: number,
  ): Promise<{ rows: GroupRow[]; bestRoi: number | undefined } | undefined>;
  /** Completeness mark and rebuild protocol. */
  readonly model: Pick<RedisReadModel, 'isReady' | 'rebuild' | 'clear' | 'observeLag'>;
}

/** Responses of the fallback path per (type, period), made stale by every projected change. */
export interface StatsResponseCache {
  get(key: string, now?: number): Promise<{ stats?: Statistics; gen: number }>;
  set(key: string, gen: number, stats: Statistics): Promise<void>;
  invalidate(): Promise<void>;
}
