import { metrics, type Logger } from '@signal/service-kit';
import { deliveryIdBound } from './delivery-state';

/** Where what outlived its use goes from. */
export interface ExpiredRecords {
  /**
   * Removes every delivery whose id sorts below `bound`, and what hangs off it; how many
   * deliveries went. Once `signal` is aborted it stops after the batch in hand (the next sweep
   * goes on from there).
   */
  removeBefore(bound: string, signal?: AbortSignal): Promise<number>;
  /** Removes the recover-call counts of windows that ended before `now`; how many. */
  removeEndedRecoverWindows(now: Date): Promise<number>;
}

export interface RetentionOptions {
  store: ExpiredRecords;
  /** How long a delivery is kept, from its event's time. */
  retentionMs: number;
  /** How long from the end of one sweep to the start of the next. */
  intervalMs: number;
  logger: Logger;
  now?: () => number;
}

/**
 * Deliveries are kept for the retention and then removed with their log, open marks and attempt
 * claims: without it a subscription's history, the store and the count behind every page of
 * deliveries grow for good, and the deliveries of deleted subscriptions are kept for no one.
 * A sweep removes what the retention passed since the last one, and the recover-call counts of
 * windows that ended (an account's next recover drops only the window before its own, so one
 * count per gap between its recover minutes would stay); a store that fails it is tried again at
 * the next. Every replica sweeps: a document already gone is no error, and an empty sweep is a
 * few index probes, less than a lease would cost to hold.
 */
export class DeliveryRetention {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;
  /** Aborted by stop: a sweep with a long backlog must not hold the worker's shutdown. */
  private abort = new AbortController();

  constructor(private readonly options: RetentionOptions) {}

  start(): void {
    this.stopped = false;
    this.abort = new AbortController();
    this.next();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    clearTimeout(this.timer);
    await this.sweeping;
  }

  /** One sweep now: how many deliveries it removed. */
  async sweep(): Promise<number> {
    const now = (this.options.now ?? Date.now)();
    const removed = await this.options.store.removeBefore(
      deliveryIdBound(now - this.options.retentionMs),
      this.abort.signal,
    );
    metrics.webhookDeliveriesRemoved().inc(removed);
    if (!this.abort.signal.aborted) await this.options.store.removeEndedRecoverWindows(new Date(now));
    if (removed > 0)
      this.options.logger.info(
        { removed, retention_ms: this.options.retentionMs },
        'deliveries past their retention removed',
      );
    return removed;
  }

  private next(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweeping = this.sweep()
        .then(
          () => undefined,
          (err: unknown) =>
            this.options.logger.warn(
              { err: err instanceof Error ? err.message : String(err) },
              'delivery retention sweep failed; the next one tries again',
            ),
        )
        .finally(() => {
          this.sweeping = undefined;
          this.next();
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }
}
