import type { SignalSnapshot } from '@signal/contracts';
import type { SignalDetail } from '@signal/contracts';
import type { TimelinePage, TimelineQuery } from '../data/timeline-index';

/** What follows every MongoDB write: the read index and the outbox relay learn of it. */
export interface WriteEffects {
  /** `outboxIds`: where the events wait (the signals themselves unless a bulk batch holds them). */
  written(snapshots: SignalSnapshot[], outboxIds?: string[]): Promise<void>;
}

/** The read index: undefined means "not complete, ask MongoDB". */
export interface SignalReadIndex {
  page(query: TimelineQuery): Promise<TimelinePage | undefined>;
  get(id: string): Promise<SignalDetail | 'missing' | undefined>;
}
