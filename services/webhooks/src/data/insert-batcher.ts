import { Batcher } from '@signal/service-kit';

/**
 * Writes documents by the batch: one unordered insertMany for whatever arrived within a short
 * window (or as soon as `maxItems` wait), so a thousand attempt records a second cost a few
 * writes, not a thousand. On FerretDB an insert of a hundred rows costs about what one update
 * costs (an update there is a query, a decode and a transaction of its own), which is why
 * delivery state is appended, never updated.
 *
 * `insert` resolves once the write that holds the caller's documents is done, with the ids the
 * store already had (a duplicate `_id` means "recorded before": a redelivered job, a
 * redelivered event). It rejects when that write failed for any other reason.
 */
export interface InsertBatcherOptions<T> {
  /** One unordered insertMany; resolves with the positions refused as duplicates, or rejects. */
  write(docs: T[]): Promise<Set<number>>;
  id(doc: T): string;
  maxItems: number;
  windowMs: number;
  /** Writes in flight at once; more wait (the store's own concurrency is bounded). */
  maxConcurrentWrites: number;
}

export class InsertBatcher<T> {
  /** Per document: whether the store already held it. */
  private readonly batcher: Batcher<T, boolean>;

  constructor(private readonly options: InsertBatcherOptions<T>) {
    this.batcher = new Batcher({
      run: async (docs) => {
        const duplicates = await options.write(docs);
        return docs.map((_, i) => duplicates.has(i));
      },
      maxItems: options.maxItems,
      windowMs: options.windowMs,
      maxConcurrent: options.maxConcurrentWrites,
    });
  }

  /** Queues the documents; resolves with the ids among them the store already held. */
  async insert(docs: readonly T[]): Promise<Set<string>> {
    const held = await this.batcher.add(docs);
    return new Set(docs.filter((_, i) => held[i]).map((d) => this.options.id(d)));
  }

  /** Writes everything queued and waits for every write in flight. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }
}
