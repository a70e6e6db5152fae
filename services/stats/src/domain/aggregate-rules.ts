import type { SignalType } from '@signal/contracts';
import type { ProjectedSignal } from './projection';

/**
 * The rules of the incremental statistics: what one signal contributes to the per-type
 * counters (count, winners, ROI sum) of its UTC minute, hour and day, how a newer state of it
 * changes them, and which minutes, hours and days make up a period. The Redis model in data/stats-aggregates.ts
 * stores and reads what these decide.
 */
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** ROI sums are kept as integers of 1/10,000 percent: integer increments are exact, floats drift. */
export const ROI_SCALE = 10_000;

/** What the aggregates keep of one signal: enough to take it out of its buckets again. */
export interface AggregateEntry {
  version: number;
  type: SignalType;
  createdMs: number;
  winner: 0 | 1;
  /** ROI in 1/ROI_SCALE percent. */
  roi: number;
}

export function aggregateEntry(p: ProjectedSignal): AggregateEntry {
  return {
    version: p.version,
    type: p.type,
    createdMs: new Date(p.created_at).getTime(),
    winner: p.is_winner,
    roi: Math.round(p.roi * ROI_SCALE),
  };
}

export const minuteOf = (ms: number): number => Math.floor(ms / MINUTE_MS);
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** A change to the counters of one type in one minute (and so in its hour, its day and all time). */
export interface CounterChange {
  type: SignalType;
  minute: number;
  hour: number;
  day: number;
  count: number;
  winners: number;
  roi: number;
}

export type AggregateDelta =
  /** An older or repeated version: nothing changes. */
  | { kind: 'unchanged' }
  /** `left`: the entry whose type and buckets the signal leaves (its type or minute moved). */
  | { kind: 'changed'; counters: CounterChange[]; left?: AggregateEntry };

function contribution(e: AggregateEntry, sign: 1 | -1): CounterChange {
  return {
    type: e.type,
    minute: minuteOf(e.createdMs),
    hour: hourOf(e.createdMs),
    day: dayOf(e.createdMs),
    count: sign,
    winners: sign * e.winner,
    roi: sign * e.roi,
  };
}

/**
 * How a signal's newer state changes the counters. A first state adds one signal to its minute;
 * a newer state in the same type and minute adds only the differences (a winner more or less, the
 * ROI's change); one whose type or minute moved (the domain never does this, but a bad event must
 * not corrupt the counts) takes the old state out and puts the new one in.
 */
export function aggregateDelta(previous: AggregateEntry | undefined, next: AggregateEntry): AggregateDelta {
  if (previous && previous.version >= next.version) return { kind: 'unchanged' };
  if (!previous) return { kind: 'changed', counters: [contribution(next, 1)] };
  if (previous.type === next.type && minuteOf(previous.createdMs) === minuteOf(next.createdMs)) {
    const at = contribution(next, 1);
    return {
      kind: 'changed',
      counters: [{ ...at, count: 0, winners: next.winner - previous.winner, roi: next.roi - previous.roi }],
    };
  }
  return { kind: 'changed', counters: [contribution(previous, -1), contribution(next, 1)], left: previous };
}

/**
 * The counter buckets, finest first: each one's name prefix and length. Every bucket is aligned
 * to its length (UTC), and each length divides the next, so a period's whole minutes split into
 * few buckets: at most 9 minutes, 5 ten-minutes, 5 hours and 3 quarter days on each side of its
 * whole days.
 */
export const COUNTER_UNITS = [
  { prefix: 'm', ms: MINUTE_MS },
  { prefix: 't', ms: 10 * MINUTE_MS },
  { prefix: 'h', ms: HOUR_MS },
  { prefix: 'q', ms: 6 * HOUR_MS },
  { prefix: 'd', ms: DAY_MS },
] as const;

/** The counter buckets a signal created in `minute` counts in (besides all time). */
export function bucketsOfMinute(minute: number): string[] {
  const start = minute * MINUTE_MS;
  return COUNTER_UNITS.map((u) => `${u.prefix}${Math.floor(start / u.ms)}`);
}

/**
 * The buckets that together hold every signal created after a cutoff, up to now. The counters
 * and the best ROI are read from different buckets: counters add up, a maximum is read from the
 * top of a ranking.
 */
export interface PeriodPlan {
  cutoffMs: number;
  /** The minute the cutoff falls in: its signals after the cutoff are read one by one. */
  edgeMinute: number;
  /**
   * Every whole minute after the edge minute up to the last hour that can hold a signal, as the
   * fewest aligned counter buckets (`m…`, `t…`, `h…`, `q…`, `d…`; see COUNTER_UNITS).
   */
  buckets: string[];
  /** The hour the cutoff falls in: its ROI ranking is read from the top down, skipping older signals. */
  edgeHour: number;
  /** The rest of the edge hour's day: the top of each hour's ROI ranking is a candidate. */
  roiHours: number[];
  /** The days after the edge hour's day: the top of each one's ROI ranking is a candidate. */
  laterDays: number[];
}

/**
 * Periods count signals created strictly after the cutoff. The edge minute is read signal by
 * signal (a handful of signals even at a million, where the whole edge hour read that way
 * would be the slowest part of a 30-day response); every later minute up to the last hour that
 * can hold a signal (now + 1 h covers the small future tolerance of created_at) comes from the
 * largest aligned counter bucket that fits, so a 30-day period reads ~50 buckets, not ~110
 * minutes, hours and days. The best ROI scans only the edge hour's ranking (not the edge day's: when the
 * cutoff falls late in a day, most of that day's top ROIs are before it and the scan goes deep),
 * then takes the tops of the later hours of that day and of the later days.
 */
export function periodPlan(cutoffMs: number, nowMs: number): PeriodPlan {
  const edgeMinute = minuteOf(cutoffMs);
  const edgeHour = hourOf(cutoffMs);
  const end = (hourOf(nowMs) + 2) * HOUR_MS;
  const buckets: string[] = [];
  let at = (edgeMinute + 1) * MINUTE_MS;
  while (at < end) {
    let unit: (typeof COUNTER_UNITS)[number] = COUNTER_UNITS[0];
    for (const u of COUNTER_UNITS) if (at % u.ms === 0 && at + u.ms <= end) unit = u;
    buckets.push(`${unit.prefix}${at / unit.ms}`);
    at += unit.ms;
  }
  const edgeDay = dayOf(cutoffMs);
  const roiHours: number[] = [];
  for (let rh = edgeHour + 1; rh < (edgeDay + 1) * 24; rh++) roiHours.push(rh);
  const laterDays: number[] = [];
  for (let d = edgeDay + 1; d <= dayOf(nowMs) + 1; d++) laterDays.push(d);
  return { cutoffMs, edgeMinute, buckets, edgeHour, roiHours, laterDays };
}
