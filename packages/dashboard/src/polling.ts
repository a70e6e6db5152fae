/**
 * When a list that updates itself asks the API again. It follows what it shows (the soonest
 * pending delivery's next attempt), and it waits after each refresh at least four times what that
 * refresh took: a list that is slow to make (a long history on a store that sorts in memory) is
 * then being made at most a fifth of the time, never back to back, whatever else the page asks.
 * A refresh the API refused for a while (429, or 503 with `retry_after`) holds every refresh until
 * that while is over: asking sooner would only be refused again, each time counted on the plan.
 */
export const MIN_GAP_MS = 2000;
export const MAX_GAP_MS = 30_000;
export const QUIET_FACTOR = 4;
/**
 * The shortest gap between reads that follow pending deliveries by themselves (not an action's
 * live window): on a busy subscription some delivery is always about to be retried, and each read
 * counts on the account's plan, which the page must not spend for its keys (every 4 s was 26 of
 * a 60-a-minute plan with the subscription's reads).
 */
export const DUE_GAP_MS = 10_000;
/** How old the header's reading of the subscription may grow while the list refreshes itself. */
export const HEADER_EVERY_MS = 30_000;

export interface RefreshState {
  /** When the soonest pending delivery shown is due; +∞ when none is pending. */
  dueAt: number;
  /** Until when the list refreshes though nothing is pending (a test or recovery just queued). */
  liveUntil: number;
  /** When the last refresh ended, and how long it took (ms). */
  lastEnd: number;
  lastTook: number;
  /** No refresh before this (the API refused one and asked to wait); 0 when it did not. */
  notBefore: number;
}

/** When a refused refresh may be asked again: 429 (or 503 with retry_after) waits retry_after. */
export function notBeforeAfter(now: number, status: number, retryAfter: number | undefined): number {
  if (retryAfter !== undefined && (status === 429 || status === 503)) return now + retryAfter * 1000;
  // A 429 that names no wait is asked again at the slowest pace the list ever keeps.
  if (status === 429) return now + MAX_GAP_MS;
  return 0;
}

export function refreshDue(now: number, s: RefreshState): boolean {
  if (now < s.notBefore) return false;
  if (now < s.lastEnd + Math.max(MIN_GAP_MS, QUIET_FACTOR * s.lastTook)) return false;
  if (now < s.liveUntil) return true;
  if (s.dueAt === Number.POSITIVE_INFINITY) return false;
  if (now < s.lastEnd + DUE_GAP_MS) return false;
  return now >= Math.min(s.lastEnd + MAX_GAP_MS, s.dueAt + 1000);
}
