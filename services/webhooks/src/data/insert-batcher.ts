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

interface Waiting<T> {
  doc: T;
  done(duplicate: boolean): void;
  fail(err: unknown): void;
}

export class InsertBatcher<T> {
  private queue: Waiting<T>[] = [];
  private timer?: NodeJS.Timeout;
  private writing = 0;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: InsertBatcherOptions<T>) {}

  /** Queues the documents; resolves with the ids among them the store already held. */
  async insert(docs: readonly T[]): Promise<Set<string>> {
    if (docs.length === 0) return new Set();
    const outcomes = docs.map(
      (doc) =>
        new Promise<string | undefined>((resolve, reject) => {
          this.queue.push({
            doc,
            done: (duplicate) => resolve(duplicate ? this.options.id(doc) : undefined),
            fail: reject,
          });
        }),
    );
    this.schedule();
    const duplicates = new Set<string>();
    for (const id of await Promise.all(outcomes)) if (id !== undefined) duplicates.add(id);
    return duplicates;
  }

  /** Writes everything queued and waits for every write in flight. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0 || this.inFlight.size > 0) {
      this.drain(true);
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
    }
  }

  private schedule(): void {
    if (this.queue.length >= this.options.maxItems) this.drain(false);
    if (this.queue.length > 0 && !this.timer)
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.drain(true);
      }, this.options.windowMs);
  }

  /** Starts writes while there is room: full batches, or (once the window is over) any. */
  private drain(windowOver: boolean): void {
    while (
      this.writing < this.options.maxConcurrentWrites &&
      (this.queue.length >= this.options.maxItems || (windowOver && this.queue.length > 0))
    ) {
      const batch = this.queue.splice(0, this.options.maxItems);
      this.writing += 1;
      const write = this.write(batch).finally(() => {
        this.writing -= 1;
        this.inFlight.delete(write);
        // What waited for a free slot goes now.
        if (this.queue.length > 0) this.drain(!this.timer);
      });
      this.inFlight.add(write);
    }
  }

  private async write(batch: Waiting<T>[]): Promise<void> {
    try {
      const duplicates = await this.options.write(batch.map((w) => w.doc));
      for (const [i, w] of batch.entries()) w.done(duplicates.has(i));
    } catch (err) {
      for (const w of batch) w.fail(err);
    }
  }
}
