import {
  COUNTER_UNITS,
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  bucketsOfMinute,
  aggregateDelta,
  aggregateEntry,
  periodPlan,
  type AggregateEntry,
} from './aggregate-rules';

const T0 = Date.UTC(2026, 10, 22, 13, 37, 12, 345);
const minute = Math.floor(T0 / MINUTE_MS);
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

  it('when a signal is seen first, then it adds one signal, its win and its ROI to its minute, hour and day', () => {
    expect(aggregateDelta(undefined, entry({ winner: 1 }))).toEqual({
      kind: 'changed',
      counters: [{ type: 'new', minute, hour, day, count: 1, winners: 1, roi: 1_500_000 }],
    });
  });

  it('when the same or an older version comes again, then nothing changes', () => {
    expect(aggregateDelta(entry({ version: 3 }), entry({ version: 3, roi: 9 }))).toEqual({
      kind: 'unchanged',
    });
    expect(aggregateDelta(entry({ version: 3 }), entry({ version: 2 }))).toEqual({ kind: 'unchanged' });
  });

  it('when a newer state stays in its type and minute, then only the differences are added', () => {
    const delta = aggregateDelta(
      entry(),
      entry({ version: 2, winner: 1, roi: -500_000, createdMs: T0 + 1_000 }),
    );
    expect(delta).toEqual({
      kind: 'changed',
      counters: [{ type: 'new', minute, hour, day, count: 0, winners: 1, roi: -2_000_000 }],
    });
  });

  it('when a newer state moves to another type or minute, then the old contribution leaves and the new one arrives', () => {
    const previous = entry({ winner: 1 });
    const next = entry({ version: 2, type: 'wallet', createdMs: T0 - 3 * DAY_MS });
    expect(aggregateDelta(previous, next)).toEqual({
      kind: 'changed',
      counters: [
        { type: 'new', minute, hour, day, count: -1, winners: -1, roi: -1_500_000 },
        {
          type: 'wallet',
          minute: minute - 72 * 60,
          hour: hour - 72,
          day: day - 3,
          count: 1,
          winners: 0,
          roi: 1_500_000,
        },
      ],
      left: previous,
    });
    // Another minute of the same hour moves the minute counters too.
    const nextMinute = entry({ version: 2, createdMs: T0 + MINUTE_MS });
    expect(aggregateDelta(previous, nextMinute)).toMatchObject({
      kind: 'changed',
      counters: [
        { minute, count: -1 },
        { minute: minute + 1, hour, count: 1 },
      ],
    });
  });
});

describe('period buckets', () => {
  const unitOf = (prefix: string) => COUNTER_UNITS.find((u) => u.prefix === prefix)!;

  /** The minutes a bucket name covers. */
  function minutesOf(bucket: string): number[] {
    const unit = unitOf(bucket[0]!);
    const first = (Number(bucket.slice(1)) * unit.ms) / MINUTE_MS;
    return Array.from({ length: unit.ms / MINUTE_MS }, (_, i) => first + i);
  }

  /** Every roi candidate hour: the roi hours and the hours of the later days. */
  function roiCandidates(plan: ReturnType<typeof periodPlan>): number[] {
    return [
      ...plan.roiHours,
      ...plan.laterDays.flatMap((d) => Array.from({ length: 24 }, (_, i) => d * 24 + i)),
    ];
  }

  it.each([
    ['24h', DAY_MS],
    ['7d', 7 * DAY_MS],
    ['30d', 30 * DAY_MS],
  ])(
    'when the period is %s, then every whole minute after the edge minute up to now + 1 h is counted once, and the ROI rankings after the edge hour are read once',
    (_, length) => {
      const plan = periodPlan(T0 - length, T0);
      const expected = [];
      for (let m = plan.edgeMinute + 1; m < (hour + 2) * 60; m++) expected.push(m);
      expect(plan.buckets.flatMap(minutesOf).sort((a, b) => a - b)).toEqual(expected);
      expect(plan.edgeMinute).toBe(Math.floor((T0 - length) / MINUTE_MS));
      expect(plan.edgeHour).toBe(Math.floor((T0 - length) / HOUR_MS));
      const hours = [];
      for (let h = plan.edgeHour + 1; h <= (day + 2) * 24 - 1; h++) hours.push(h);
      expect(roiCandidates(plan)).toEqual(hours);
    },
  );

  it('when whole days fit, then they are read as days, and the edges in the fewest aligned buckets', () => {
    const plan = periodPlan(T0 - 30 * DAY_MS, T0);
    const count = (prefix: string) => plan.buckets.filter((b) => b[0] === prefix).length;
    expect(count('d')).toBe(29);
    for (const prefix of ['m', 't', 'h', 'q']) expect(count(prefix)).toBeLessThanOrEqual(2 * 9);
    expect(plan.buckets.length).toBeLessThanOrEqual(29 + 2 * (9 + 5 + 5 + 3));
    // Each bucket is aligned to its own length.
    for (const b of plan.buckets) expect((minutesOf(b)[0]! * MINUTE_MS) % unitOf(b[0]!).ms).toBe(0);
  });

  it('when a signal is counted, then it is in one bucket of each length, the ones that hold its minute', () => {
    const names = bucketsOfMinute(minute);
    expect(names.map((b) => b[0])).toEqual(COUNTER_UNITS.map((u) => u.prefix));
    for (const b of names) expect(minutesOf(b)).toContain(minute);
    expect(names).toContain(`h${hour}`);
    expect(names).toContain(`d${day}`);
  });

  it('when the cutoff sits exactly on a minute, then that minute is the edge minute (read signal by signal)', () => {
    const cutoff = Math.floor(T0 / MINUTE_MS) * MINUTE_MS;
    const plan = periodPlan(cutoff, T0);
    expect(plan.edgeMinute).toBe(minute);
    expect(plan.buckets[0]).toBe(`m${minute + 1}`);
  });

  it('when the cutoff sits in the last minute of an hour, then the buckets start at the next hour', () => {
    const cutoff = (hour + 1) * HOUR_MS - 1;
    const plan = periodPlan(cutoff, T0 + HOUR_MS);
    expect(plan.edgeMinute).toBe((hour + 1) * 60 - 1);
    expect(plan.buckets[0]).toBe(`h${hour + 1}`);
  });

  it('when the best ROI is looked for, then the edge hour, the rest of its day and every later day up to tomorrow are candidates', () => {
    const plan = periodPlan(T0 - 2 * DAY_MS, T0);
    expect(plan.edgeHour).toBe(hour - 48);
    expect(plan.roiHours[0]).toBe(hour - 47);
    expect(plan.roiHours.at(-1)).toBe((day - 1) * 24 - 1);
    expect(plan.laterDays).toEqual([day - 1, day, day + 1]);
  });
});
