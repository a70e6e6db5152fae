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
 * (its prefetch) and an attempt holds its job until the receiver answers or times out, so an
 * account whose receivers hang could take every job the worker holds and make every other
 * account's deliveries wait in the queue for its timeouts. An account may start an attempt while
 * it has fewer in flight than its share: `capacity / (busy accounts + 1)`, counting itself and
 * leaving one share free for an account not busy yet, and at most `maxPerAccount`. One slow
 * account holds at most half the jobs, two a third each, and so on; a job over its account's
 * share is put back to wait outside the worker (it holds no job meanwhile).
 */
export class AccountShares {
  private readonly inFlight = new Map<string, number>();
  constructor(
    private readonly capacity: number,
    private readonly maxPerAccount: number,
  ) {}

  /** How many attempts `accountId` may have in flight now. */
  shareOf(accountId: string): number {
    const busy = this.inFlight.size + (this.inFlight.has(accountId) ? 0 : 1);
    return Math.max(1, Math.min(this.maxPerAccount, Math.floor(this.capacity / (busy + 1))));
  }

  tryAcquire(accountId: string): boolean {
    const n = this.inFlight.get(accountId) ?? 0;
    if (n >= this.shareOf(accountId)) return false;
    this.inFlight.set(accountId, n + 1);
    return true;
  }

  release(accountId: string): void {
    const n = (this.inFlight.get(accountId) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(accountId);
    else this.inFlight.set(accountId, n);
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
