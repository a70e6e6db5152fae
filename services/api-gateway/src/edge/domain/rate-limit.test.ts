import { DAY_MS, LocalFallbackLimiter, MINUTE_MS, rateView, retryAfterSeconds } from './rate-limit';

/** The limit windows' pure rules; the Redis limiter itself is tested through the gateway's HTTP API. */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 30);
const minuteEnd = (Math.floor(T0 / MINUTE_MS) + 1) * (MINUTE_MS / 1000);
const dayEnd = (Math.floor(T0 / DAY_MS) + 1) * (DAY_MS / 1000);

describe('limit windows', () => {
  it('when one window has fewer requests left, then the headers describe that one', () => {
    const minute = { limit: 60, used: 10, resetAt: minuteEnd };
    const day = { limit: 10_000, used: 9_995, resetAt: dayEnd };
    expect(rateView(minute, day)).toEqual({ limit: 10_000, remaining: 5, reset: dayEnd });
    expect(rateView({ ...minute, used: 59 }, day)).toEqual({ limit: 60, remaining: 1, reset: minuteEnd });
  });

  it('when the minute window is exhausted, then Retry-After is the seconds to the next minute, at least 1', () => {
    const minute = { limit: 60, used: 60, resetAt: minuteEnd };
    const day = { limit: 10_000, used: 100, resetAt: dayEnd };
    expect(retryAfterSeconds(minute, day, T0)).toBe(30);
    expect(retryAfterSeconds(minute, day, minuteEnd * 1000 - 10)).toBe(1);
  });

  it('when both windows are exhausted, then Retry-After waits for the later reset (the day)', () => {
    const minute = { limit: 60, used: 60, resetAt: minuteEnd };
    const day = { limit: 10_000, used: 10_000, resetAt: dayEnd };
    expect(retryAfterSeconds(minute, day, T0)).toBe(dayEnd - T0 / 1000);
  });
});

describe('local fallback limiter (Redis down)', () => {
  const subject = { subject: 'acc_test', perMinute: 3, perDay: 100 };

  it('when a known key sends more than its per-minute rate, then the rest of the minute is limited and the next minute allows again', () => {
    const limiter = new LocalFallbackLimiter();
    const outcomes = [0, 1, 2, 3, 4].map((i) => limiter.check(subject, T0 + i).outcome);
    expect(outcomes).toEqual(['allowed', 'allowed', 'allowed', 'limited', 'limited']);
    expect(limiter.check(subject, T0 + MINUTE_MS)).toMatchObject({
      outcome: 'allowed',
      minute: { limit: 3, used: 1, resetAt: minuteEnd + 60 },
    });
  });

  it('when a subject is peeked at, then it sees the window its next request would find, and nothing is counted', () => {
    const limiter = new LocalFallbackLimiter();
    expect(limiter.peek(subject, T0)).toMatchObject({ outcome: 'allowed', minute: { used: 0 } });
    for (let i = 0; i < 3; i++) limiter.check(subject, T0);
    for (let i = 0; i < 5; i++)
      expect(limiter.peek(subject, T0)).toMatchObject({ outcome: 'limited', minute: { used: 3 } });
    expect(limiter.check(subject, T0 + MINUTE_MS)).toMatchObject({ outcome: 'allowed', minute: { used: 1 } });
  });

  it('when two subjects share the fallback, then each has its own window', () => {
    const limiter = new LocalFallbackLimiter();
    for (let i = 0; i < 3; i++) limiter.check(subject, T0);
    expect(limiter.check(subject, T0).outcome).toBe('limited');
    expect(limiter.check({ ...subject, subject: 'acc_other' }, T0).outcome).toBe('allowed');
  });
});
