import type { SignalSnapshot } from '@signal/contracts';
import type { SignalDetail } from '@signal/contracts';
import type { TimelinePage, TimelineQuery } from '../data/timeline-index';

/** What follows every MongoDB write: the read index and the outbox relay learn of it. */
export interface WriteEffects {
  written(snapshots: SignalSnapshot[]): Promise<void>;
}

/** The read index: undefined means "not complete, ask MongoDB". */
export interface SignalReadIndex {
  page(query: TimelineQuery): Promise<TimelinePage | undefined>;
  get(id: string): Promise<SignalDetail | 'missing' | undefined>;
}
