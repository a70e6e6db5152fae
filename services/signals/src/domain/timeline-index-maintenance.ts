import type { SignalSnapshot } from '@signal/contracts';
import { PeriodicTask, type Logger } from '@signal/service-kit';
import type { SignalSource, TimelineRepairLog, TimelineWriter } from './ports';
import { toSnapshot } from './signal.mapper';

export interface TimelineIndexMaintenanceOptions {
  index: TimelineWriter;
  repository: SignalSource;
  repairs: TimelineRepairLog;
  logger: Logger;
  /** How often Redis is checked for a lost index and failed updates are retried. */
  intervalMs: number;
}

export type RebuildProgress = (done: number) => void;

/** Failed snapshots held in memory at most (beyond, they are read back from MongoDB). */
const MAX_HELD = 100_000;

/**
 * Keeps the timeline index equal to MongoDB:
 * - every write applies its new snapshot (version-guarded) right after the MongoDB write;
 * - a failed apply (Redis unreachable or too slow) is recorded and re-applied later: from the
 *   snapshots this process still holds (up to a bound), from MongoDB for the rest (after a
 *   restart). Held snapshots spare the store reads by id: on a FerretDB without an index its
 *   `_id` pushdown can use, each `_id` read is a scan of the collection, and reading back a
 *   whole failed batch that way holds the store for a long time;
 * - the outbox relay applies each event's snapshot again before the event leaves the outbox,
 *   so a crash between the MongoDB write and the index update is repaired by the same sweep
 *   that repairs the outbox;
 * - Redis losing the index (restart, flush, failover: its `ready` mark is gone) is noticed on
 *   the next read or tick, and the index is rebuilt by streaming the collection once; reads
 *   are served from MongoDB until the rebuild is complete.
 */
export class TimelineIndexMaintenance {
  private readonly task: PeriodicTask;
  /** Snapshots whose apply failed, newest version per signal, until re-applied. */
  private readonly unapplied = new Map<string, SignalSnapshot>();

  constructor(private readonly o: TimelineIndexMaintenanceOptions) {
    this.task = new PeriodicTask('timeline-index-maintenance', o.intervalMs, () => this.tick(), o.logger);
  }

  /** After a MongoDB write: make it visible in the index now; never fails the write. */
  async record(snapshots: SignalSnapshot[]): Promise<void> {
    try {
      await this.o.index.apply(snapshots);
      for (const s of snapshots) this.o.index.model.observeLag(Date.parse(s.updated_at));
    } catch (err) {
      this.o.logger.warn({ err: errorText(err), count: snapshots.length }, 'timeline index update failed');
      for (const s of snapshots) {
        const seen = this.unapplied.get(s.id);
        if (seen && seen.version >= s.version) continue;
        if (!seen && this.unapplied.size >= MAX_HELD) continue; // read back from MongoDB instead
        this.unapplied.set(s.id, s);
      }
      await this.o.repairs
        .record(snapshots.map((s) => s.id))
        .catch((e: unknown) =>
          this.o.logger.error(
            { err: errorText(e) },
            'timeline repair not recorded; the next rebuild covers it',
          ),
        );
      this.runSoon();
    }
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** Are writes waiting to be re-applied (their first apply failed)? The index lags MongoDB until none are. */
  async repairsPending(): Promise<boolean> {
    return this.unapplied.size > 0 || (await this.o.repairs.next(1)).length > 0;
  }

  /** A read found the index incomplete: check now rather than at the next tick. */
  runSoon(): void {
    this.task.runSoon();
  }

  private async tick(): Promise<void> {
    if (!(await this.o.index.model.isReady())) {
      await this.rebuild();
      return;
    }
    for (;;) {
      const ids = await this.o.repairs.next(500);
      if (ids.length === 0) return;
      const held = new Map<string, SignalSnapshot | undefined>(ids.map((id) => [id, this.unapplied.get(id)]));
      const read = await Promise.all(
        ids.filter((id) => !held.get(id)).map((id) => this.o.repository.findById(id)),
      );
      const fromMemory = [...held.values()].flatMap((s) => s ?? []);
      await this.o.index.apply([...fromMemory, ...read.flatMap((d) => (d ? [toSnapshot(d)] : []))]);
      // An id that failed again meanwhile (a newer snapshot held) keeps its repair row; a held
      // snapshot is let go only once its row is gone (a second pass meanwhile finds it still
      // held, instead of reading it back from the store).
      const repaired = ids.filter((id) => this.unapplied.get(id) === held.get(id));
      await this.o.repairs.done(repaired);
      for (const id of repaired) if (this.unapplied.get(id) === held.get(id)) this.unapplied.delete(id);
      if (repaired.length < ids.length) return;
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
