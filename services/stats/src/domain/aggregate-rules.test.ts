import {
  DAY_MS,
  HOUR_MS,
  aggregateDelta,
  aggregateEntry,
  periodPlan,
  type AggregateEntry,
} from './aggregate-rules';

const T0 = Date.UTC(2026, 10, 22, 13, 37, 12, 345);
const hour = Math.floor(T0 / HOUR_MS);
const day = Math.floor(T0 / DAY_MS);

const entry = (over: Partial<AggregateEntry> = {}): AggregateEntry => ({
  version: 1,
  type: 'new',
  createdMs: T0,
  winner: 0,
  roi: 1_500_000,
  ...over,
});

describe('stats deltas', () => {
  it('when a projected signal is turned into an entry, then its ROI is kept in 1/10,000 percent', () => {
    expect(
      aggregateEntry({
        _id: 'sig_x',
        type: '7d',
        status: 'winner',
        is_winner: 1,
        roi: 12.3456,
        created_at: new Date(T0),
        version: 3,
      }),
    ).toEqual({ version: 3, type: '7d', createdMs: T0, winner: 1, roi: 123_456 });
  });

  it('when a signal is seen first, then it adds one signal, its win and its ROI to its hour and day', () => {
    expect(aggregateDelta(undefined, entry({ winner: 1 }))).toEqual({
      kind: 'changed',
      counters: [{ type: 'new', hour, day, count: 1, winners: 1, roi: 1_500_000 }],
    });
  });

  it('when the same or an older version comes again, then nothing changes', () => {
    expect(aggregateDelta(entry({ version: 3 }), entry({ version: 3, roi: 9 }))).toEqual({
      kind: 'unchanged',
    });
    expect(aggregateDelta(entry({ version: 3 }), entry({ version: 2 }))).toEqual({ kind: 'unchanged' });
  });

  it('when a newer state stays in its type and hour, then only the differences are added', () => {
    const delta = aggregateDelta(
      entry(),
      entry({ version: 2, winner: 1, roi: -500_000, createdMs: T0 + 60_000 }),
    );
    expect(delta).toEqual({
      kind: 'changed',
      counters: [{ type: 'new', hour, day, count: 0, winners: 1, roi: -2_000_000 }],
    });
  });

  it('when a newer state moves to another type or hour, then the old contribution leaves and the new one arrives', () => {
    const previous = entry({ winner: 1 });
    const next = entry({ version: 2, type: 'wallet', createdMs: T0 - 3 * DAY_MS });
    expect(aggregateDelta(previous, next)).toEqual({
      kind: 'changed',
      counters: [
        { type: 'new', hour, day, count: -1, winners: -1, roi: -1_500_000 },
        { type: 'wallet', hour: hour - 72, day: day - 3, count: 1, winners: 0, roi: 1_500_000 },
      ],
      left: previous,
    });
  });
});

describe('period buckets', () => {
  /** Every hour after the edge hour appears exactly once, as an hour or inside a day. */
  function coveredHours(plan: ReturnType<typeof periodPlan>): number[] {
    return [
      ...plan.hours,
      ...plan.days.flatMap((d) => Array.from({ length: 24 }, (_, i) => d * 24 + i)),
    ].sort((a, b) => a - b);
  }

  it.each([
    ['24h', DAY_MS],
    ['7d', 7 * DAY_MS],
    ['30d', 30 * DAY_MS],
  ])(
    'when the period is %s, then the whole hours after the edge hour up to now + 1 h are covered once',
    (_, length) => {
      const plan = periodPlan(T0 - length, T0);
      const expected = [];
      for (let h = plan.edgeHour + 1; h <= hour + 1; h++) expected.push(h);
      expect(coveredHours(plan)).toEqual(expected);
      expect(plan.edgeHour).toBe(Math.floor((T0 - length) / HOUR_MS));
    },
  );

  it('when whole days fit, then they are read as days, and hours only up to and after the day boundaries', () => {
    const plan = periodPlan(T0 - 7 * DAY_MS, T0);
    expect(plan.days).toHaveLength(6);
    expect(plan.hours.length).toBeLessThan(48);
    for (const d of plan.days) expect(d * 24).toBeGreaterThan(plan.edgeHour);
  });

  it('when the cutoff sits exactly on an hour, then that hour is the edge hour (read signal by signal)', () => {
    const cutoff = Math.floor(T0 / HOUR_MS) * HOUR_MS;
    const plan = periodPlan(cutoff, T0);
    expect(plan.edgeHour).toBe(hour);
    expect(plan.hours).toEqual([hour + 1]);
    expect(plan.days).toEqual([]);
  });

  it('when the best ROI is looked for, then the edge day and every later day up to tomorrow are candidates', () => {
    const plan = periodPlan(T0 - 2 * DAY_MS, T0);
    expect(plan.edgeDay).toBe(day - 2);
    expect(plan.laterDays).toEqual([day - 1, day, day + 1]);
  });
});
