import type { Logger } from 'pino';

export interface PendingOutbox<E> {
  /** The document that carries the events. */
  documentId: string;
  events: E[];
}

export interface OutboxStore<E> {
  findPending(limit: number): Promise<PendingOutbox<E>[]>;
  /** Removes exactly these events from the document's outbox (after the broker confirmed them). */
  markPublished(documentId: string, eventIds: string[]): Promise<void>;
}

export interface OutboxRelayOptions<E> {
  store: OutboxStore<E>;
  publish: (event: E) => Promise<void>;
  eventId: (event: E) => string;
  logger: Logger;
  intervalMs?: number;
  batchSize?: number;
}

/**
 * Publishes events that were written atomically with their document. An event leaves the
 * outbox only after the broker confirmed it, so a broker outage delays events and never
 * loses one; a crash between confirm and removal re-sends it (consumers dedupe by id).
 */
export class OutboxRelay<E> {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private again = false;

  constructor(private readonly options: OutboxRelayOptions<E>) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Asks for a pass now (e.g. right after a write) instead of at the next tick. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.drain()
        .then(() => undefined)
        .finally(() => {
          this.running = undefined;
          const next = this.again ? 0 : (this.options.intervalMs ?? 500);
          this.again = false;
          this.schedule(next);
        });
    }, delay);
  }

  /** One pass: publish pending batches until the outbox is empty or a publish fails. */
  async drain(): Promise<number> {
    const { store, publish, eventId, logger } = this.options;
    const batchSize = this.options.batchSize ?? 200;
    let published = 0;
    try {
      for (;;) {
        const pending = await store.findPending(batchSize);
        if (pending.length === 0) return published;
        // Publishes of one batch go out together on one channel (so a document's events keep
        // their order) and are confirmed together; only confirmed events leave the outbox.
        const results = await Promise.all(
          pending.map(async (doc) => {
            const settled = await Promise.allSettled(doc.events.map((event) => publish(event)));
            const done = doc.events.filter((_, i) => settled[i]!.status === 'fulfilled').map(eventId);
            if (done.length) await store.markPublished(doc.documentId, done);
            return { done: done.length, failed: done.length < doc.events.length };
          }),
        );
        published += results.reduce((n, r) => n + r.done, 0);
        if (results.some((r) => r.failed)) throw new Error('broker refused or is unreachable');
        if (this.stopped) return published;
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message, published }, 'outbox relay paused');
      return published;
    }
  }
}
