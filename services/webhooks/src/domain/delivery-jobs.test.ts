import { parseRetryAfter, retryDelayMs } from './delivery-jobs';
import { AccountShares, DeliverySlots, SubscriptionConcurrency } from './concurrency';

describe('retry spacing', () => {
  const delays = [10_000, 120_000, 900_000];

  it('when attempt n fails, then retry n waits its delay ±20 %, and after the last there is none', () => {
    expect(retryDelayMs(delays, 1, undefined, 3_600_000, () => 0)).toBe(8000);
    expect(retryDelayMs(delays, 1, undefined, 3_600_000, () => 1)).toBe(12_000);
    expect(retryDelayMs(delays, 2, undefined, 3_600_000, () => 0.5)).toBe(120_000);
    expect(retryDelayMs(delays, 4, undefined, 3_600_000)).toBeUndefined();
  });

  it('when the receiver sends Retry-After, then it wins when longer, within the cap', () => {
    expect(retryDelayMs(delays, 1, 60_000, 3_600_000, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(delays, 1, 1000, 3_600_000, () => 0.5)).toBe(10_000);
    expect(retryDelayMs(delays, 1, 10 * 3_600_000, 3_600_000, () => 0.5)).toBe(3_600_000);
  });

  it('when Retry-After is seconds or an HTTP date, then it becomes milliseconds from now', () => {
    expect(parseRetryAfter('30')).toBe(30_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

describe('per-subscription concurrency', () => {
  it('when a subscription has its cap in flight, then more are refused until one is released; others are unaffected', () => {
    const c = new SubscriptionConcurrency(2);
    expect(c.tryAcquire('a')).toBe(true);
    expect(c.tryAcquire('a')).toBe(true);
    expect(c.tryAcquire('a')).toBe(false);
    expect(c.tryAcquire('b')).toBe(true);
    c.release('a');
    expect(c.tryAcquire('a')).toBe(true);
  });
});

describe('per-account shares', () => {
  it('when one account is busy alone, then it may hold half the capacity, never more than its cap', () => {
    const shares = new AccountShares(10, 100);
    let held = 0;
    while (shares.tryAcquire('slow')) held++;
    expect(held).toBe(5);
    const capped = new AccountShares(10, 3);
    let cappedHeld = 0;
    while (capped.tryAcquire('slow')) cappedHeld++;
    expect(cappedHeld).toBe(3);
  });

  it('when many accounts have one attempt each, then a bursting account uses the idle capacity but leaves a share free for a newcomer', () => {
    const shares = new AccountShares(12, 100);
    for (const a of ['a1', 'a2', 'a3', 'a4', 'a5']) expect(shares.tryAcquire(a)).toBe(true);
    let burst = 0;
    while (shares.tryAcquire('burst')) burst++;
    // 5 + 6 = 11 in flight: the 12th place stays free (the fair share of 12 among 7 is 1).
    expect(burst).toBe(6);
    expect(shares.tryAcquire('newcomer')).toBe(true);
  });

  it('when a slow account holds its share, then another account still gets attempts, and a third too', () => {
    const shares = new AccountShares(12, 100);
    let slow = 0;
    while (shares.tryAcquire('slow')) slow++;
    expect(slow).toBe(6);
    let other = 0;
    while (shares.tryAcquire('other')) other++;
    expect(other).toBe(4);
    // The slow account may take no more while two accounts are busy (its share is now 4).
    expect(shares.tryAcquire('slow')).toBe(false);
    expect(shares.tryAcquire('third')).toBe(true);
    expect(slow + other + 1).toBeLessThan(12);
  });

  it("when an account releases every attempt, then it is no longer counted busy and the others' share grows back", () => {
    const shares = new AccountShares(12, 100);
    expect(shares.tryAcquire('a')).toBe(true);
    expect(shares.tryAcquire('b')).toBe(true);
    expect(shares.shareOf('a')).toBe(4);
    shares.release('b');
    expect(shares.shareOf('a')).toBe(6);
    // A release of what was not taken changes nothing.
    shares.release('b');
    expect(shares.shareOf('b')).toBe(4);
    expect(shares.shareOf('a')).toBe(6);
  });

  it("when the subscription is at its cap, then the account's place is given back too", () => {
    const slots = new DeliverySlots(new AccountShares(100, 100), new SubscriptionConcurrency(1));
    expect(slots.tryAcquire('acc', 'wh_1')).toBe(true);
    expect(slots.tryAcquire('acc', 'wh_1')).toBe(false);
    const accounts = new AccountShares(4, 100);
    const tight = new DeliverySlots(accounts, new SubscriptionConcurrency(1));
    expect(tight.tryAcquire('acc', 'wh_1')).toBe(true);
    expect(tight.tryAcquire('acc', 'wh_1')).toBe(false);
    expect(tight.tryAcquire('acc', 'wh_2')).toBe(true);
    tight.release('acc', 'wh_1');
    tight.release('acc', 'wh_2');
    expect(accounts.shareOf('other')).toBe(2);
  });
});
