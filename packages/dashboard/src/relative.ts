/** "in 23 h", "in 5 min", "3 min ago": how far a moment is from now, roughly. */
export function fmtRelative(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  const abs = Math.abs(ms);
  const text =
    abs < 60_000
      ? `${Math.max(1, Math.round(abs / 1000))} s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)} min`
        : abs < 2 * 86_400_000
          ? `${Math.round(abs / 3_600_000)} h`
          : abs < 730 * 86_400_000
            ? `${Math.round(abs / 86_400_000)} days`
            : `${Math.round(abs / (365.25 * 86_400_000))} years`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}
