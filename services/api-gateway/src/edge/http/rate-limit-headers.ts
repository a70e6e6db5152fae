import type { RateView } from '../domain/rate-limit';

/** The one place that writes X-RateLimit-*: as a flat [name, value, …] list for writeHead. */
export function rateLimitHeaders(rate: RateView): string[] {
  return [
    'X-RateLimit-Limit',
    String(rate.limit),
    'X-RateLimit-Remaining',
    String(rate.remaining),
    'X-RateLimit-Reset',
    String(rate.reset),
  ];
}

/** The same headers added to a response head being built ([name, value, …]): no list of their own. */
export function pushRateLimitHeaders(head: string[], rate: RateView): void {
  head.push(
    'X-RateLimit-Limit',
    String(rate.limit),
    'X-RateLimit-Remaining',
    String(rate.remaining),
    'X-RateLimit-Reset',
    String(rate.reset),
  );
}

/** The same headers set on a response that is still being built (Express routes). */
export function setRateLimitHeaders(
  res: { setHeader(name: string, value: string): unknown },
  rate: RateView,
): void {
  const list = rateLimitHeaders(rate);
  for (let i = 0; i < list.length; i += 2) res.setHeader(list[i]!, list[i + 1]!);
}
