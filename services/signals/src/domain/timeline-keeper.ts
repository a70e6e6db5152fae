import type { SignalSnapshot } from '@signal/contracts';
import { PeriodicTask, type Logger } from '@signal/service-kit';
import type { SignalSource, TimelineRepairLog, TimelineWriter } from './ports';
import { toSnapshot } from './signal.mapper';

export interface KeeperOptions {
  index: TimelineWriter;
  repository: SignalSource;
  repairs: TimelineRepairLog;
  logger: Logger;
  /** How often Redis is checked for a lost index and failed updates are retried. */
  intervalMs: number;
}

export type RebuildProgress = (done: number) => void;

/**
 * Keeps the timeline index equal to MongoDB:
 * - every write applies its new snapshot (version-guarded) right after the MongoDB write;
 * - a failed apply (Redis unreachable) is recorded and re-applied from MongoDB later;
 * - the outbox relay applies each event's snapshot again before the event leaves the outbox,
 *   so a crash between the MongoDB write and the index update is repaired by the same sweep
 *   that repairs the outbox;
 * - Redis losing the index (restart, flush, failover: its `ready` mark is gone) is noticed on
 *   the next read or tick, and the index is rebuilt by streaming the collection once; reads
 *   are answered from MongoDB until the rebuild is complete.
 */
export class TimelineKeeper {
  private readonly task: PeriodicTask;

  constructor(private readonly o: KeeperOptions) {
    this.task = new PeriodicTask('timeline-keeper', o.intervalMs, () => this.tick(), o.logger);
  }

  /** After a MongoDB write: make it visible in the index now; never fails the write. */
  async record(snapshots: SignalSnapshot[]): Promise<void> {
    try {
      await this.o.index.apply(snapshots);
      for (const s of snapshots) this.o.index.model.observeLag(Date.parse(s.updated_at));
    } catch (err) {
      this.o.logger.warn({ err: errorText(err), count: snapshots.length }, 'timeline index update failed');
      await this.o.repairs
        .record(snapshots.map((s) => s.id))
        .catch((e: unknown) =>
          this.o.logger.error(
            { err: errorText(e) },
            'timeline repair not recorded; the next rebuild covers it',
          ),
        );
      this.kick();
    }
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** A read found the index incomplete: check now rather than at the next tick. */
  kick(): void {
    this.task.kick();
  }

  private async tick(): Promise<void> {
    if (!(await this.o.index.model.isReady())) {
      await this.rebuild();
      return;
    }
    for (;;) {
      const ids = await this.o.repairs.next(500);
      if (ids.length === 0) return;
      const docs = await Promise.all(ids.map((id) => this.o.repository.findById(id)));
      await this.o.index.apply(docs.flatMap((d) => (d ? [toSnapshot(d)] : [])));
      await this.o.repairs.done(ids);
    }
  }

  /**
   * Streams the collection once into the index (version-guarded, so concurrent writes stay
   * correct), then marks it ready. Returns false when another process is rebuilding.
   */
  rebuild(progress?: RebuildProgress): Promise<boolean> {
    return this.o.index.model.rebuild(
      () => this.o.repository.streamAll(1000),
      (batch) => this.o.index.apply(batch.map(toSnapshot)),
      progress,
    );
  }
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
