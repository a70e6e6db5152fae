import type { RateView } from '../domain/rate-limit';

/** The one place that writes X-RateLimit-*: added to a response head being built ([name, value, …]). */
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

/** The same headers as a flat [name, value, …] list of their own, for writeHead. */
export function rateLimitHeaders(rate: RateView): string[] {
  const list: string[] = [];
  pushRateLimitHeaders(list, rate);
  return list;
}

/** The same headers set on a response that is still being built (Express routes). */
export function setRateLimitHeaders(
  res: { setHeader(name: string, value: string): unknown },
  rate: RateView,
): void {
  const list = rateLimitHeaders(rate);
  for (let i = 0; i < list.length; i += 2) res.setHeader(list[i]!, list[i + 1]!);
}
