import { parseRetryAfter, retryDelayMs } from './delivery-jobs';
import { SubscriptionConcurrency } from './deliver.use-case';

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
