import { setTimeout as sleep } from 'node:timers/promises';

/** The longest rest between two batches. */
const MAX_REST_MS = 1000;

/** Waits after a batch that took `tookMs`; an aborted `signal` ends the wait at once. */
export type Rest = (tookMs: number, signal: AbortSignal | undefined) => Promise<void>;

/**
 * Rests as long as the batch took, at most a second: a long backlog (the first sweep after an
 * upgrade, or after the worker was down) goes at half the store's time, and the other half stays
 * with every account's reads and writes.
 */
export const restAsLongAsTook: Rest = async (tookMs, signal) => {
  try {
    await sleep(Math.min(MAX_REST_MS, Math.max(0, tookMs)), undefined, { signal });
  } catch (err) {
    // Aborted: the caller sees its signal and stops.
    if (!signal?.aborted) throw err;
  }
};

/**
 * Runs `batch` until one removes fewer than `size` (nothing is left) or `signal` is aborted,
 * resting between batches; how many went in all.
 */
export async function removeInBatches(
  batch: () => Promise<number>,
  size: number,
  signal: AbortSignal | undefined,
  rest: Rest = restAsLongAsTook,
  now: () => number = Date.now,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const started = now();
    const went = await batch();
    removed += went;
    if (went < size || signal?.aborted) return removed;
    await rest(now() - started, signal);
    if (signal?.aborted) return removed;
  }
}
