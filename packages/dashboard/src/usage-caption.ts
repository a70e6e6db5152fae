/**
 * What a usage chart's caption says of the plan's limit: where the limit is on the chart (the
 * dashed line), or that it is off the chart's scale and how far the scale reaches. The scale
 * follows the requests, so a limit of thousands is usually off it; the caption says so plainly
 * rather than leaving the reader to look for a line that is not drawn.
 */
export function limitCaption(
  limit: number,
  per: 'minute' | 'day',
  scaleTop: number,
  /** The numbers' locale: the reader's unless given. */
  locale?: string,
): string {
  const allows = `The plan allows ${limit.toLocaleString(locale)} requests a ${per}`;
  return limit <= scaleTop
    ? `${allows}: the dashed line.`
    : `${allows}, above this chart (its scale reaches ${scaleTop.toLocaleString(locale)}).`;
}
