import { Batcher, isMongoUnavailable } from '@signal/service-kit';

/**
 * Writes documents by the batch: one unordered insertMany for whatever arrived within a short
 * window (or as soon as `maxItems` wait), so a thousand attempt records a second cost a few
 * writes, not a thousand. On FerretDB an insert of a hundred rows costs about what one update
 * costs (an update there is a query, a decode and a transaction of its own), which is why
 * delivery state is appended, never updated.
 *
 * A batch holds many callers' documents (many accounts'), so one document the store refuses
 * never fails the others: when a batch's write fails for a reason other than the store being
 * unreachable, each of its documents is written alone; the ones that land resolve, a refused one
 * rejects only its own caller, and is reported (`refused`: logged, metered).
 *
 * `insert` resolves once the write that holds the caller's documents is done, with the ids the
 * store already had (a duplicate `_id` means "recorded before": a redelivered job, a
 * redelivered event). It rejects when one of the caller's documents could not be written.
 */
export interface InsertBatcherOptions<T> {
  /** One unordered insertMany; resolves with the positions refused as duplicates, or rejects. */
  write(docs: T[]): Promise<Set<number>>;
  id(doc: T): string;
  maxItems: number;
  windowMs: number;
  /** Writes in flight at once; more wait (the store's own concurrency is bounded). */
  maxConcurrentWrites: number;
  /**
   * A write beside one in flight starts only with at least this many documents (default 1):
   * fewer wait for the write in flight and go with what arrives meanwhile (service-kit Batcher).
   */
  minBatchWhileWriting?: number;
  /** How many documents of a write the store held already (a redelivered job's, event's). */
  held?(count: number): void;
  /** A document the store refused when written alone (its caller's insert rejects with `err`). */
  refused?(doc: T, err: unknown): void;
  /** Failures that are the store's, not a document's (default: the store is unreachable). */
  transient?(err: unknown): boolean;
}

/** One document's outcome in its batch: already held, newly written, or refused with an error. */
type Outcome = { held: boolean } | { error: unknown };

export class InsertBatcher<T> {
  private readonly batcher: Batcher<T, Outcome>;

  constructor(private readonly options: InsertBatcherOptions<T>) {
    this.batcher = new Batcher({
      run: (docs) => this.write(docs),
      maxItems: options.maxItems,
      windowMs: options.windowMs,
      maxConcurrent: options.maxConcurrentWrites,
      minBatchWhileRunning: options.minBatchWhileWriting,
    });
  }

  private async write(docs: T[]): Promise<Outcome[]> {
    const transient = this.options.transient ?? isMongoUnavailable;
    try {
      const duplicates = await this.options.write(docs);
      if (duplicates.size > 0) this.options.held?.(duplicates.size);
      return docs.map((_, i) => ({ held: duplicates.has(i) }));
    } catch (err) {
      if (transient(err)) throw err;
      if (docs.length === 1) {
        this.options.refused?.(docs[0]!, err);
        return [{ error: err }];
      }
    }
    // The batch failed on something one of its documents holds: each alone, one at a time (a
    // document the failed write did store comes back as held).
    const outcomes: Outcome[] = [];
    for (const doc of docs) outcomes.push(...(await this.write([doc])));
    return outcomes;
  }

  /** Queues the documents; resolves with the ids among them the store already held. */
  async insert(docs: readonly T[]): Promise<Set<string>> {
    const outcomes = await this.batcher.add(docs);
    const held = new Set<string>();
    for (const [i, outcome] of outcomes.entries()) {
      if ('error' in outcome) throw outcome.error;
      if (outcome.held) held.add(this.options.id(docs[i]!));
    }
    return held;
  }

  /** Writes everything queued and waits for every write in flight. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }
}
