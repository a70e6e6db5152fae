/**
 * Runs work by the batch: whatever callers add within a short window (or as soon as `maxItems`
 * wait) goes to one `run`, so a thousand small writes a second cost a few large ones. Each
 * caller's promise settles when the batch holding its items is done: with one result per item,
 * or with the batch's error. The webhooks worker batches its inserts with it and the stats
 * consumer its projection writes — on FerretDB a hundred-row write costs about what one
 * single-row write costs.
 */
export interface BatcherOptions<T, R> {
  /** Runs one batch; resolves with one result per item, in order, or rejects for all of them. */
  run(items: T[]): Promise<R[]>;
  maxItems: number;
  windowMs: number;
  /** Batches in flight at once; more wait (the store's own concurrency is bounded). */
  maxConcurrent: number;
  /**
   * A batch beside one already in flight starts only with at least this many items (or a full
   * one); fewer wait for the batch in flight and go with whatever else arrived meanwhile.
   * Default 1: any batch whose window is over. Under load a batch then grows with the load
   * rather than the number of batches, where each batch has a cost of its own that is that of
   * many items (a store's command and transaction).
   */
  minBatchWhileRunning?: number;
}

interface Waiting<T, R> {
  item: T;
  done(result: R): void;
  fail(err: unknown): void;
}

export class Batcher<T, R> {
  private queue: Waiting<T, R>[] = [];
  private timer?: NodeJS.Timeout;
  private running = 0;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: BatcherOptions<T, R>) {}

  /** Queues the items; resolves with their results once their batch (or batches) ran. */
  add(items: readonly T[]): Promise<R[]> {
    if (items.length === 0) return Promise.resolve([]);
    const outcomes = items.map(
      (item) => new Promise<R>((done, fail) => this.queue.push({ item, done, fail })),
    );
    this.schedule();
    return Promise.all(outcomes);
  }

  /** Runs everything queued and waits for every batch in flight. */
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

  /**
   * Starts batches while there is room: a full one at once; once the window is over, whatever
   * waits when no batch is in flight, or at least `minBatchWhileRunning` items beside those that are.
   */
  private drain(windowOver: boolean): void {
    const { maxItems, maxConcurrent, minBatchWhileRunning = 1 } = this.options;
    const ready = () =>
      this.queue.length >= maxItems ||
      (windowOver && this.queue.length >= (this.running === 0 ? 1 : minBatchWhileRunning));
    while (this.running < maxConcurrent && ready()) {
      const batch = this.queue.splice(0, this.options.maxItems);
      this.running += 1;
      const running = this.runBatch(batch).finally(() => {
        this.running -= 1;
        this.inFlight.delete(running);
        // What waited for a free slot goes now.
        if (this.queue.length > 0) this.drain(!this.timer);
      });
      this.inFlight.add(running);
    }
  }

  private async runBatch(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.options.run(batch.map((w) => w.item));
      if (results.length !== batch.length)
        throw new Error(`batch of ${batch.length} returned ${results.length} results`);
      for (const [i, result] of results.entries()) batch[i]?.done(result);
    } catch (err) {
      for (const w of batch) w.fail(err);
    }
  }
}
