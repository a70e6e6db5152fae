import type { SubscriptionHealth } from '@signal/contracts';
import type { AttemptRecord, SubscriptionHealthRecord } from './records';

const HOUR_MS = 3_600_000;
/** The key of an hour's failure count: `h<hours since the epoch>`. */
export const hourKey = (at: Date): string => `h${Math.floor(at.getTime() / HOUR_MS)}`;

/** A subscription's attempts recorded since the last flush, folded: what one flush writes. */
export interface HealthBatch {
  /** The latest attempt. */
  last: AttemptRecord;
  /** The latest success, if any. */
  lastSuccessAt: Date | null;
  /** When each failed attempt started. */
  failures: Date[];
}

const succeeded = (a: AttemptRecord) => a.error === null;

/** Adds one attempt to a subscription's batch (attempts may come in any order). */
export function addAttempt(batch: HealthBatch | undefined, a: AttemptRecord): HealthBatch {
  const at = new Date(a.started_at);
  const next: HealthBatch = batch ?? { last: a, lastSuccessAt: null, failures: [] };
  if (new Date(next.last.started_at) <= at) next.last = a;
  if (!succeeded(a)) next.failures.push(at);
  else if (!next.lastSuccessAt || next.lastSuccessAt < at) next.lastSuccessAt = at;
  return next;
}

/**
 * The two updates a batch makes: the latest attempt's fields, applied only when no later attempt
 * was written already (another worker's), and the failure counts, always added. `failing_since`
 * is unset after a success, set to the first failure after a success in the batch, or else kept
 * at the earliest failure (`$min` sets it when absent).
 */
export function healthUpdates(batch: HealthBatch): {
  latest: { filter: Record<string, unknown>; update: Record<string, Record<string, unknown>> };
  counts: Record<string, Record<string, unknown>> | undefined;
} {
  const at = new Date(batch.last.started_at);
  const set: Record<string, unknown> = {
    'health.last_attempt_at': at,
    'health.last_succeeded': succeeded(batch.last),
    'health.last_status_code': batch.last.status_code,
    'health.last_error': batch.last.error,
  };
  const update: Record<string, Record<string, unknown>> = { $set: set };
  const success = batch.lastSuccessAt;
  const sinceSuccess = batch.failures.filter((f) => !success || f > success);
  const firstFailure = sinceSuccess.length > 0 ? new Date(Math.min(...sinceSuccess.map(Number))) : undefined;
  if (succeeded(batch.last)) update.$unset = { 'health.failing_since': '' };
  else if (success && firstFailure) set['health.failing_since'] = firstFailure;
  else if (firstFailure) update.$min = { 'health.failing_since': firstFailure };
  const latest = {
    filter: {
      $or: [{ 'health.last_attempt_at': { $lt: at } }, { 'health.last_attempt_at': { $exists: false } }],
    },
    update,
  };
  if (batch.failures.length === 0) return { latest, counts: undefined };
  const inc: Record<string, number> = {};
  for (const f of batch.failures) {
    const key = `health.failures.${hourKey(f)}`;
    inc[key] = (inc[key] ?? 0) + 1;
  }
  // The hours a day before the newest are dropped as the counts move on (readers ignore them anyway).
  const newest = Math.floor(Math.max(...batch.failures.map(Number)) / HOUR_MS);
  const unset: Record<string, ''> = {};
  for (let h = newest - 48; h <= newest - 24; h++)
    if (!(`health.failures.h${h}` in inc)) unset[`health.failures.h${h}`] = '';
  return { latest, counts: { $inc: inc, $unset: unset } };
}

/** What a subscription's health shows of its latest attempt, beyond its time: a change of it is news. */
export const outcomeOf = (a: AttemptRecord): string => `${succeeded(a)}|${a.status_code}|${a.error}`;

/** A subscription's health as this process last wrote it. */
export interface WrittenHealth {
  /** When it was written (ms). */
  at: number;
  /** `outcomeOf` the latest attempt written. */
  outcome: string;
}

/**
 * Is a subscription's batch written now? At once when its latest attempt's outcome differs from
 * the one written (succeeded or failed, another status code or error): health shows changes
 * within a flush. What only moves on — the last attempt's time, the failure counts — waits up to
 * `refreshMs` and goes in one write: on FerretDB an update is a read, a rewrite of the whole
 * subscription document and its indexes, and a transaction, and a steady fleet would otherwise
 * pay one per active subscription every flush.
 */
export function healthDue(
  batch: HealthBatch,
  written: WrittenHealth | undefined,
  now: number,
  refreshMs: number,
): boolean {
  return written === undefined || written.outcome !== outcomeOf(batch.last) || now - written.at >= refreshMs;
}

const iso = (d: Date | undefined | null) => (d ? new Date(d).toISOString() : null);

/** A subscription's health as a client reads it. */
export function healthView(
  record: SubscriptionHealthRecord | undefined,
  now = new Date(),
): SubscriptionHealth {
  const currentHour = Math.floor(now.getTime() / HOUR_MS);
  let failures24h = 0;
  for (const [key, n] of Object.entries(record?.failures ?? {})) {
    const hour = Number(key.slice(1));
    if (hour > currentHour - 24 && hour <= currentHour) failures24h += n;
  }
  const hasLast = record?.last_attempt_at !== undefined;
  return {
    last_delivery_status: hasLast ? (record?.last_succeeded ? 'succeeded' : 'failed') : null,
    last_delivery_at: iso(record?.last_attempt_at),
    last_response_status: record?.last_status_code ?? null,
    last_error: record?.last_error ?? null,
    failing_since: record?.last_succeeded === false ? iso(record.failing_since) : null,
    failures_24h: failures24h,
  };
}
