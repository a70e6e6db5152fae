import { fmtRelative } from '../src/relative';

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const inMs = (ms: number) => new Date(NOW + ms).toISOString();
const DAY = 86_400_000;

describe('how far a time is, for people', () => {
  it('when a time is seconds to days away, then it says so in the unit that reads best', () => {
    expect(fmtRelative(inMs(30_000), NOW)).toBe('in 30 s');
    expect(fmtRelative(inMs(-5 * 60_000), NOW)).toBe('5 min ago');
    expect(fmtRelative(inMs(24 * 3_600_000), NOW)).toBe('in 24 h');
    expect(fmtRelative(inMs(30 * DAY), NOW)).toBe('in 30 days');
  });

  it('when a time is years away (a key that expires in 9999), then it says years, not millions of days', () => {
    expect(fmtRelative(inMs(3 * 365.25 * DAY), NOW)).toBe('in 3 years');
    expect(fmtRelative('9999-12-31T00:00:00Z', NOW)).toBe('in 7973 years');
  });
});
