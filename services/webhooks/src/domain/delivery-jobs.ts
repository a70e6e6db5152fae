import type { WebhookDeliveryJob } from '@signal/contracts';

/**
 * Puts a delivery attempt on the queue now, or after `delayMs` through the broker's delay
 * cascade; a first attempt due now given a `lane` goes to that lane.
 */
export type ScheduleJob = (job: WebhookDeliveryJob, delayMs?: number, lane?: number) => Promise<void>;

/** Retry n (1-based) waits delays[n-1] ±20 %; a receiver's Retry-After wins when longer, up to a cap. */
export function retryDelayMs(
  delays: number[],
  failedAttempt: number,
  retryAfterMs: number | undefined,
  maxRetryAfterMs: number,
  random = Math.random,
): number | undefined {
  const base = delays[failedAttempt - 1];
  if (base === undefined) return undefined;
  const jittered = Math.round(base * (0.8 + 0.4 * random()));
  return retryAfterMs === undefined ? jittered : Math.min(Math.max(jittered, retryAfterMs), maxRetryAfterMs);
}

/** Retry-After as seconds or an HTTP date → milliseconds from now. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The first wait of a job put back for want of a place, and the longest. */
export const DEFERRAL_FIRST_MS = 1000;
export const DEFERRAL_MAX_MS = 16_000;

/**
 * How long a job put back for want of a place waits before it asks again, after `deferred`
 * earlier put-backs: 1 s, doubling to 16 s, ±20 %. A job asks again while its subscription or
 * its account is full; at one second each, an account whose receivers hang sent its whole
 * backlog round the broker every second (~0.5 ms of broker CPU per trip), thousands a second,
 * and every other account's deliveries waited for the broker (docs/benchmarks.md, webhooks).
 * The jitter keeps a burst put back together from coming back together.
 */
export function deferralDelayMs(deferred: number, random = Math.random): number {
  const base = Math.min(DEFERRAL_MAX_MS, DEFERRAL_FIRST_MS * 2 ** Math.min(deferred, 16));
  return Math.round(base * (0.8 + 0.4 * random()));
}
