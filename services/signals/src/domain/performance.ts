/** ROI in percent from market caps: 150 means +150 %. Rounded to 2 decimals for stable output. */
export function roiPercent(entry: number, value: number): number {
  if (entry <= 0) return 0;
  return Math.round((value / entry - 1) * 10_000) / 100;
}
