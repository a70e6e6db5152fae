/** Caps in-flight deliveries per subscription; a job over the cap is put back for a moment. */
export class SubscriptionConcurrency {
  private readonly inFlight = new Map<string, number>();
  constructor(private readonly max: number) {}
  tryAcquire(id: string): boolean {
    const n = this.inFlight.get(id) ?? 0;
    if (n >= this.max) return false;
    this.inFlight.set(id, n + 1);
    return true;
  }
  release(id: string): void {
    const n = (this.inFlight.get(id) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(id);
    else this.inFlight.set(id, n);
  }
}

/**
 * Shares the worker's attempts among accounts. A consumer holds at most `capacity` jobs
 * (its prefetch) and an attempt holds its job until the receiver responds or times out, so an
 * account whose receivers hang could take every job the worker holds and make every other
 * account's deliveries wait in the queue for its timeouts.
 *
 * An account's fair share is `capacity / (busy accounts + 1)`: the accounts with attempts in
 * flight, itself counted, and one share kept for an account not busy yet. Below its share an
 * account may always start an attempt; above it, only while a fair share of the capacity stays
 * free after it (an account with a burst uses what others leave idle, but never the room a
 * newcomer needs); never beyond `maxPerAccount`. One slow account holds at most half the jobs,
 * two a third each plus what is idle, and so on. A job refused here is put back to wait outside
 * the worker (it holds no job meanwhile).
 */
export class AccountShares {
  private readonly inFlight = new Map<string, number>();
  private total = 0;
  constructor(
    private readonly capacity: number,
    private readonly maxPerAccount: number,
  ) {}

  /** The fair share of `accountId` now. */
  shareOf(accountId: string): number {
    const busy = this.inFlight.size + (this.inFlight.has(accountId) ? 0 : 1);
    return Math.max(1, Math.floor(this.capacity / (busy + 1)));
  }

  tryAcquire(accountId: string): boolean {
    const n = this.inFlight.get(accountId) ?? 0;
    if (n >= this.maxPerAccount) return false;
    const share = this.shareOf(accountId);
    if (n >= share && this.total + 1 > this.capacity - share) return false;
    this.inFlight.set(accountId, n + 1);
    this.total += 1;
    return true;
  }

  release(accountId: string): void {
    const n = this.inFlight.get(accountId);
    if (n === undefined) return;
    this.total -= 1;
    if (n <= 1) this.inFlight.delete(accountId);
    else this.inFlight.set(accountId, n - 1);
  }
}

/** The two limits an attempt must pass, taken together (both or neither). */
export class DeliverySlots {
  constructor(
    private readonly accounts: AccountShares,
    private readonly subscriptions: SubscriptionConcurrency,
  ) {}

  tryAcquire(accountId: string, subscriptionId: string): boolean {
    if (!this.accounts.tryAcquire(accountId)) return false;
    if (this.subscriptions.tryAcquire(subscriptionId)) return true;
    this.accounts.release(accountId);
    return false;
  }

  release(accountId: string, subscriptionId: string): void {
    this.subscriptions.release(subscriptionId);
    this.accounts.release(accountId);
  }
}
