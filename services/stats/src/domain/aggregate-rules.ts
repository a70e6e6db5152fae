import type { SignalType } from '@signal/contracts';
import type { ProjectedSignal } from './projection';

/**
 * The rules of the incremental statistics: what one signal contributes to the per-type
 * counters (count, winners, ROI sum) of its UTC hour and day, how a newer state of it changes
 * them, and which hours and days make up a period. The Redis model in data/stats-aggregates.ts
 * stores and reads what these decide.
 */
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

export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS);
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** A change to the counters of one type in one hour (and so in its day and in all time). */
export interface CounterChange {
  type: SignalType;
  hour: number;
  day: number;
  count: number;
  winners: number;
  roi: number;
}

export type AggregateDelta =
  /** An older or repeated version: nothing changes. */
  | { kind: 'unchanged' }
  /** `left`: the entry whose type and day the signal leaves (its type or hour moved). */
  | { kind: 'changed'; counters: CounterChange[]; left?: AggregateEntry };

function contribution(e: AggregateEntry, sign: 1 | -1): CounterChange {
  return {
    type: e.type,
    hour: hourOf(e.createdMs),
    day: dayOf(e.createdMs),
    count: sign,
    winners: sign * e.winner,
    roi: sign * e.roi,
  };
}

/**
 * How a signal's newer state changes the counters. A first state adds one signal to its hour;
 * a newer state in the same type and hour adds only the differences (a winner more or less, the
 * ROI's change); one whose type or hour moved (the domain never does this, but a bad event must
 * not corrupt the counts) takes the old state out and puts the new one in.
 */
export function aggregateDelta(previous: AggregateEntry | undefined, next: AggregateEntry): AggregateDelta {
  if (previous && previous.version >= next.version) return { kind: 'unchanged' };
  if (!previous) return { kind: 'changed', counters: [contribution(next, 1)] };
  if (previous.type === next.type && hourOf(previous.createdMs) === hourOf(next.createdMs)) {
    const at = contribution(next, 1);
    return {
      kind: 'changed',
      counters: [{ ...at, count: 0, winners: next.winner - previous.winner, roi: next.roi - previous.roi }],
    };
  }
  return { kind: 'changed', counters: [contribution(previous, -1), contribution(next, 1)], left: previous };
}

/** The buckets that together hold every signal created after a cutoff, up to now. */
export interface PeriodPlan {
  cutoffMs: number;
  /** The hour the cutoff falls in: its signals after the cutoff are read one by one. */
  edgeHour: number;
  /** Whole hours after the edge hour, read from their hour counters. */
  hours: number[];
  /** Whole days after the edge hour, read from their day counters. */
  days: number[];
  /** The day the cutoff falls in: its ROI ranking is read from the top down, skipping older signals. */
  edgeDay: number;
  /** The days after the edge day: the top of each one's ROI ranking is a candidate for the best ROI. */
  laterDays: number[];
}

/**
 * Periods count signals created strictly after the cutoff. The edge hour is read signal by
 * signal; every later hour up to the last one that can hold a signal (now + 1 h covers the
 * small future tolerance of created_at) comes from hour counters up to a day boundary, then
 * from day counters while a whole day fits.
 */
export function periodPlan(cutoffMs: number, nowMs: number): PeriodPlan {
  const edgeHour = hourOf(cutoffMs);
  const lastHour = hourOf(nowMs) + 1;
  const hours: number[] = [];
  const days: number[] = [];
  let h = edgeHour + 1;
  while (h <= lastHour) {
    if (h % 24 === 0 && h + 23 <= lastHour) {
      days.push(h / 24);
      h += 24;
    } else {
      hours.push(h);
      h += 1;
    }
  }
  const edgeDay = dayOf(cutoffMs);
  const laterDays: number[] = [];
  for (let d = edgeDay + 1; d <= dayOf(nowMs) + 1; d++) laterDays.push(d);
  return { cutoffMs, edgeHour, hours, days, edgeDay, laterDays };
}
