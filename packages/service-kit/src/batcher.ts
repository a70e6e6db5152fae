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

  /** Starts batches while there is room: full ones, or (once the window is over) any. */
  private drain(windowOver: boolean): void {
    while (
      this.running < this.options.maxConcurrent &&
      (this.queue.length >= this.options.maxItems || (windowOver && this.queue.length > 0))
    ) {
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
