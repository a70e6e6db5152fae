import type { SignalDetail, SignalEvent, SignalSnapshot, SignalStatus, SignalType } from '@signal/contracts';
import type { ReadLimit, RedisReadModel } from '@signal/service-kit';
import type { SignalDocument, SignalStateChange, StoredSignal } from './signal';

/**
 * What the use cases need from outside, declared here and implemented in `data/`:
 * the signal store (MongoDB), the timeline index (Redis) and the repair log.
 */

/** What storing a new signal came to: a signal's Idempotency-Key is unique, so a taken one is an outcome. */
export type InsertSignalOutcome = 'inserted' | 'duplicate';

export interface SignalFilter {
  type?: SignalType;
  status?: SignalStatus;
  since?: Date;
  /** Keyset paging: only signals older than this id. */
  beforeId?: string;
  /** Only signals at or newer than this id (to number the page a cursor lands on). */
  fromId?: string;
}

/** The store as the create and update use cases use it. */
export interface SignalWriteStore {
  findById(id: string): Promise<StoredSignal | null>;
  findByIdemKey(key: string): Promise<StoredSignal | null>;
  /** One atomic write of the signal and its event; 'duplicate' when its key (or id) is taken. */
  insert(doc: SignalDocument): Promise<InsertSignalOutcome>;
  /**
   * Many signals and one outbox batch for their events; returns the keys that existed already
   * and the batch's events of the signals it stored (handed to the relay in memory).
   */
  insertManyWithBatch(
    docs: SignalDocument[],
    batchId: string,
  ): Promise<{ duplicates: string[]; outbox: OutboxHandoff }>;
  /** Compare-and-set on `version` with the change's event; false when another write came first. */
  replaceState(
    id: string,
    expectedVersion: number,
    set: SignalStateChange,
    event: SignalEvent,
  ): Promise<boolean>;
}

/** The store as the read use cases use it (the fallback while the index is incomplete). */
export interface SignalQueryStore {
  list(filter: SignalFilter, skip: number, limit: number, within?: ReadLimit): Promise<StoredSignal[]>;
  count(filter: SignalFilter, within?: ReadLimit): Promise<number>;
  findById(id: string): Promise<StoredSignal | null>;
}

/** The store as the index maintenance and the projections' export read it. */
export interface SignalSource {
  findById(id: string): Promise<StoredSignal | null>;
  /** Every signal once, in batches. */
  streamAll(batchSize: number): AsyncGenerator<StoredSignal[]>;
  /** Signals in id order after `afterId`. */
  exportPage(afterId: string | undefined, limit: number): Promise<StoredSignal[]>;
}

export interface TimelineQuery {
  type?: SignalType;
  status?: SignalStatus;
  /** Strictly after, in ms. */
  sinceMs?: number;
  limit: number;
  /** Rank of the first row (page number based). */
  start: number;
  /** Keyset: the last id of the previous page. */
  cursorId?: string;
  cursorMs?: number;
}

export interface TimelinePage {
  total: number;
  start: number;
  rows: SignalDetail[];
}

/** The read index: undefined means "not complete, ask the store". */
export interface SignalReadIndex {
  page(query: TimelineQuery): Promise<TimelinePage | undefined>;
  get(id: string): Promise<SignalDetail | 'missing' | undefined>;
}

/** The read index as its maintenance writes it. */
export interface TimelineWriter {
  /** Version-guarded: an older or repeated snapshot changes nothing. */
  apply(snapshots: SignalSnapshot[]): Promise<void>;
  /** Completeness mark and rebuild protocol. */
  readonly model: Pick<RedisReadModel, 'isReady' | 'rebuild' | 'observeLag'>;
}

/** Signals whose index update failed, re-applied once the index responds again. */
export interface TimelineRepairLog {
  record(ids: string[]): Promise<void>;
  next(limit: number): Promise<string[]>;
  done(ids: string[]): Promise<void>;
}

/** An outbox document just written, with its events: the relay publishes them without a read. */
export interface OutboxHandoff {
  documentId: string;
  events: SignalEvent[];
}

/** What follows every store write: the read index and the outbox relay learn of it. */
export interface WriteEffects {
  /**
   * Without `outbox`, the events wait in the signals' own outboxes and the relay reads them by
   * id (whole outboxes, in order); a bulk write hands its batch's events over. Single writes
   * do not hand theirs over: the relay would then trim a signal's outbox (under the signal's
   * write lock) with no read before it, and during a MongoDB outage the next write of that
   * signal would wait behind the hung trim past its client's timeout.
   */
  written(snapshots: SignalSnapshot[], outbox?: OutboxHandoff): Promise<void>;
}
