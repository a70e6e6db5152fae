import { minuteWindowEnd, type RateView } from './rate-limit';

/** Accounts whose last window view is kept; past it the views are dropped and relearned. */
const MAX_REMEMBERED = 100_000;

/**
 * Requests in flight per account, bounded in this process, so that one account's burst or slow
 * clients take at most `max` of the gateway's upstream capacity and every other account keeps
 * the rest. Also remembers each account's last window view: a request refused here carries the
 * rate-limit headers every response carries without a Redis call, and without being counted in
 * a window it did not use.
 */
export class InFlightLimit {
  private readonly counts = new Map<string, number>();
  private readonly rates = new Map<string, RateView>();

  constructor(readonly max: number) {}

  /** Takes a place for one request of the account; false when all of its places are taken. */
  tryAcquire(accountId: string): boolean {
    const n = this.counts.get(accountId) ?? 0;
    if (n >= this.max) return false;
    this.counts.set(accountId, n + 1);
    return true;
  }

  release(accountId: string): void {
    const n = this.counts.get(accountId) ?? 0;
    if (n <= 1) this.counts.delete(accountId);
    else this.counts.set(accountId, n - 1);
  }

  /** The window view of the account's latest admitted request. */
  noteRate(accountId: string, rate: RateView): void {
    if (!this.rates.has(accountId) && this.rates.size >= MAX_REMEMBERED) this.rates.clear();
    this.rates.set(accountId, rate);
  }

  /**
   * The account's last known window: as last seen while that window lasts (its remaining can
   * only have gone down since, by requests still in flight), else a fresh minute of its plan.
   */
  rateOf(accountId: string, perMinute: number, now = Date.now()): RateView {
    const last = this.rates.get(accountId);
    if (last && last.reset * 1000 > now) return last;
    return { limit: perMinute, remaining: perMinute, reset: minuteWindowEnd(now) / 1000 };
  }
}
