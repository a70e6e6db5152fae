/** One response of a burst, as the limit's exactness sees it. */
export interface LimitedResponse {
  status: number;
  /** X-RateLimit-Reset: the end of the window that decided (epoch seconds). */
  reset: string | undefined;
  /** X-RateLimit-Remaining. */
  remaining: string | undefined;
}

/**
 * What breaks exactness in a burst on a fresh account: the limits are fixed windows, so a burst
 * that straddles a minute's end is two bursts, one per window (a loaded machine can spread a
 * burst across a minute boundary, and both windows are then right on their own). Per window, at
 * most `limit` are admitted; where any was refused, exactly `limit`; the admitted count down from
 * `limit - 1` without gaps or repeats; and nothing but 200 and 429 responses.
 * Returns the violations (none when exact) and how many windows the burst touched.
 */
export function exactnessViolations(
  responses: readonly LimitedResponse[],
  limit: number,
): { violations: string[]; windows: number } {
  const violations: string[] = [];
  const windows = new Map<string, LimitedResponse[]>();
  for (const a of responses) {
    if (a.status !== 200 && a.status !== 429) violations.push(`a response was ${a.status}`);
    const key = a.reset ?? '(no X-RateLimit-Reset)';
    const inWindow = windows.get(key);
    if (inWindow) inWindow.push(a);
    else windows.set(key, [a]);
  }
  for (const [reset, inWindow] of windows) {
    const admitted = inWindow.filter((a) => a.status === 200);
    const refused = inWindow.length - admitted.length;
    if (admitted.length > limit)
      violations.push(`window ${reset}: ${admitted.length} admitted, limit ${limit}`);
    if (refused > 0 && admitted.length !== limit)
      violations.push(`window ${reset}: ${refused} refused after only ${admitted.length} of ${limit}`);
    const remaining = admitted.map((a) => Number(a.remaining)).sort((x, y) => y - x);
    const expected = Array.from({ length: admitted.length }, (_, i) => limit - 1 - i);
    if (JSON.stringify(remaining) !== JSON.stringify(expected))
      violations.push(
        `window ${reset}: remaining ${JSON.stringify(remaining)}, expected ${JSON.stringify(expected)}`,
      );
  }
  return { violations, windows: windows.size };
}

/**
 * Waits for the next UTC minute when less than `needMs` of this one is left, so the counts a
 * test makes next all fall in one fixed minute window.
 */
export async function startOfAMinuteIfLate(needMs = 20_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
