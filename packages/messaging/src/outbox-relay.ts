import { metrics } from '@signal/service-kit';
import type { Logger } from 'pino';

export interface PendingOutbox<E> {
  /** The document that carries the events. */
  documentId: string;
  events: E[];
}

export interface OutboxStore<E> {
  /** The sweep: any documents with unpublished events. */
  findPending(limit: number): Promise<PendingOutbox<E>[]>;
  /** The fast path: these documents were just written (looked up by id). */
  findPendingByIds(documentIds: string[]): Promise<PendingOutbox<E>[]>;
  /**
   * Removes exactly these events from the document's outbox (after the broker confirmed them);
   * `all`: they are every event the relay had for it.
   */
  markPublished(documentId: string, eventIds: string[], all: boolean): Promise<void>;
}

export interface OutboxRelayOptions<E> {
  store: OutboxStore<E>;
  publish: (event: E) => Promise<void>;
  /**
   * Runs once per document with the events the broker confirmed, before they leave the outbox
   * (the signals service re-applies them to its read index there, in one call for a whole bulk
   * batch rather than one per event). A failure keeps them in the outbox for the next pass.
   */
  confirmed?: (events: E[]) => Promise<void>;
  eventId: (event: E) => string;
  /** When the write that made the event happened (ms), for the lag and age metrics. */
  occurredAt?: (event: E) => number;
  logger: Logger;
  /** How often hinted documents are picked up when no nudge came (ms). */
  intervalMs?: number;
  /** How often the whole outbox is swept for what hints missed: broker outages, crashes (ms). */
  sweepIntervalMs?: number;
  batchSize?: number;
}

/** Handed-over documents kept in memory at most (each may hold a thousand events). */
const MAX_OFFERED = 64;
/** Handed-over documents published together in one step of a pass. */
const OFFERED_PER_PASS = 8;

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
  private readonly hinted = new Set<string>();
  /** Documents handed over with their events (`offer`), published without a read. */
  private readonly offered = new Map<string, PendingOutbox<E>>();
  private nextSweepAt = 0;

  constructor(private readonly options: OutboxRelayOptions<E>) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /**
   * Asks for a pass now, right after a write, naming the written documents so the pass reads
   * them by id instead of sweeping the whole outbox.
   */
  runSoon(documentIds: string[] = []): void {
    for (const id of documentIds) this.hinted.add(id);
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  /**
   * Hands over documents just written together with their events: the next pass publishes
   * them without reading them back. Past a bound (a broker outage during a bulk load) they are
   * named only, and the store is read for them as for any nudge.
   */
  offer(docs: PendingOutbox<E>[]): void {
    for (const doc of docs)
      if (this.offered.size < MAX_OFFERED) this.offered.set(doc.documentId, doc);
      else this.hinted.add(doc.documentId);
    this.runSoon();
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

  /** One pass: hinted documents first, then (when due) a sweep until the outbox is empty. */
  async drain(): Promise<number> {
    const { store, logger } = this.options;
    const batchSize = this.options.batchSize ?? 200;
    let published = 0;
    try {
      while (this.offered.size > 0) {
        const docs = [...this.offered.values()].slice(0, OFFERED_PER_PASS);
        for (const d of docs) this.offered.delete(d.documentId);
        const result = await this.publishAll(docs);
        published += result.done;
        this.throwIfFailed(result);
      }
      while (this.hinted.size > 0) {
        const ids = [...this.hinted].slice(0, batchSize);
        for (const id of ids) this.hinted.delete(id);
        const result = await this.publishAll(await store.findPendingByIds(ids));
        published += result.done;
        this.throwIfFailed(result);
      }
      if (Date.now() >= this.nextSweepAt) {
        this.nextSweepAt = Date.now() + (this.options.sweepIntervalMs ?? 5000);
        for (let first = true; ; first = false) {
          const pending = await store.findPending(batchSize);
          if (first) this.reportOldest(pending);
          if (pending.length === 0) break;
          const result = await this.publishAll(pending);
          published += result.done;
          this.throwIfFailed(result);
          if (this.stopped) break;
        }
      }
      return published;
    } catch (err) {
      // What was handed over and not yet published is read back from the store next time.
      for (const id of this.offered.keys()) this.hinted.add(id);
      this.offered.clear();
      logger.warn({ err: (err as Error).message, published }, 'outbox relay paused');
      // Retry soon: whatever was not confirmed stays in the outbox for the next sweep.
      this.nextSweepAt = Math.min(this.nextSweepAt, Date.now() + 1000);
      return published;
    }
  }

  /** Stops this round when a publish failed: unconfirmed events stay in the outbox for a retry soon. */
  private throwIfFailed(result: { failed: boolean }): void {
    if (result.failed) throw new Error('broker refused or is unreachable');
  }

  /** What a sweep found still waiting tells how far behind the relay is (0: nothing waits). */
  private reportOldest(pending: PendingOutbox<E>[]): void {
    const { occurredAt } = this.options;
    if (!occurredAt) return;
    let oldest = Date.now();
    for (const doc of pending) for (const e of doc.events) oldest = Math.min(oldest, occurredAt(e));
    metrics.outboxOldestPending().set((Date.now() - oldest) / 1000);
  }

  /**
   * Publishes of one batch go out together on one channel (so a document's events keep their
   * order) and are confirmed together; only confirmed events leave the outbox.
   */
  private async publishAll(pending: PendingOutbox<E>[]): Promise<{ done: number; failed: boolean }> {
    const { store, publish, eventId } = this.options;
    const results = await Promise.all(
      pending.map(async (doc) => {
        const settled = await Promise.allSettled(doc.events.map((event) => publish(event)));
        const confirmed = doc.events.filter((_, i) => settled[i]!.status === 'fulfilled');
        const done = confirmed.map(eventId);
        // A document with nothing to publish (a bulk batch whose signals were all refused as
        // repeats) is done too: left in place, every sweep would find it again, for good.
        if (done.length || doc.events.length === 0) {
          await this.options.confirmed?.(confirmed);
          await store.markPublished(doc.documentId, done, done.length === doc.events.length);
        }
        const { occurredAt } = this.options;
        if (occurredAt)
          for (const e of confirmed) metrics.outboxPublishLag().observe((Date.now() - occurredAt(e)) / 1000);
        return { done: done.length, failed: done.length < doc.events.length };
      }),
    );
    return { done: results.reduce((n, r) => n + r.done, 0), failed: results.some((r) => r.failed) };
  }
}
