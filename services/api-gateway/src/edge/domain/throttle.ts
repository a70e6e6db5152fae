import { isIPv6 } from 'node:net';
import {
  LocalFallbackLimiter,
  passesAgainAt,
  rateView,
  retryAfterSeconds,
  type RateView,
  type SharedLimiter,
  type WindowDecision,
} from './rate-limit';

/**
 * Who a per-IP limit counts: an IPv4 address (IPv4-mapped IPv6 included) as itself, an IPv6
 * address by its /64 — one customer network gets a whole /64, so counting single IPv6
 * addresses would let it rotate through 2^64 of them.
 */
export function clientGroup(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const hextets = ip.includes('::')
    ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
    : left;
  return `${hextets
    .slice(0, 4)
    .map((h) => (parseInt(h, 16) || 0).toString(16))
    .join(':')}::/64`;
}

export type ThrottleDecision =
  { limited: false; rate: RateView } | { limited: true; rate: RateView; retryAfter: number };

export interface ThrottleOptions {
  /** Prefix of the limiter subject (`ip`, `session`): one counter space per throttle. */
  name: string;
  perMinute: number;
  /** Requests per UTC day (none: the minute alone). */
  perDay?: number;
  /** Who counts as one client for this throttle (e.g. an IPv6 /64). */
  group?: (id: string) => string;
}

/**
 * A per-minute request throttle with one failure policy: when the shared limiter does not
 * respond, a per-instance limiter at the same rate decides, so a throttle never turns an outage
 * into errors or an open door. A client found over its limit is remembered until its window
 * resets, so a client already at 429 costs neither a Redis call nor a store lookup.
 * Used as the per-IP guard (everything reached without a valid API key, and logins) and as the
 * per-session limit of the dashboard.
 */
export class RequestThrottle {
  private readonly blocked = new Map<string, { until: number; rate: RateView }>();
  private readonly group: (id: string) => string;

  constructor(
    private readonly limiter: SharedLimiter,
    private readonly options: ThrottleOptions,
    private readonly fallback = new LocalFallbackLimiter(),
  ) {
    this.group = options.group ?? ((id) => id);
  }

  /** The remembered 429 for this client's group while it is still over its limit (no I/O). */
  private blockedNow(group: string, now: number): ThrottleDecision | undefined {
    const hit = this.blocked.get(group);
    if (!hit) return undefined;
    if (hit.until > now)
      return { limited: true, rate: hit.rate, retryAfter: Math.ceil((hit.until - now) / 1000) };
    this.blocked.delete(group);
    return undefined;
  }

  private subjectOf(group: string) {
    return {
      subject: `${this.options.name}:${group}`,
      perMinute: this.options.perMinute,
      perDay: this.options.perDay ?? Number.MAX_SAFE_INTEGER,
    };
  }

  /** The group's windows in Redis (the local fallback while Redis is away), this request counted or not. */
  private async windows(group: string, now: number, counted: boolean): Promise<WindowDecision> {
    const subject = this.subjectOf(group);
    try {
      return await (counted ? this.limiter.count(subject, now) : this.limiter.peek(subject, now));
    } catch {
      return counted ? this.fallback.check(subject, now) : this.fallback.peek(subject, now);
    }
  }

  /**
   * This client's window as its next counted request would find it, counting nothing: the
   * headers of a response that uses none of the client's budget (a page's static assets).
   */
  async peek(id: string, now = Date.now()): Promise<RateView> {
    const group = this.group(id);
    const remembered = this.blockedNow(group, now);
    if (remembered) return remembered.rate;
    const decision = await this.windows(group, now, false);
    return rateView(decision.minute, decision.day);
  }

  /**
   * This client's window as this process alone knows it (a 429 it remembers, else the per-instance
   * limiter the throttle falls back on), with no I/O: for a response that must not wait on Redis.
   */
  peekLocally(id: string, now = Date.now()): RateView {
    const group = this.group(id);
    const remembered = this.blockedNow(group, now);
    if (remembered) return remembered.rate;
    const decision = this.fallback.peek(this.subjectOf(group), now);
    return rateView(decision.minute, decision.day);
  }

  /** Counts one request of this client. */
  async count(id: string, now = Date.now()): Promise<ThrottleDecision> {
    const group = this.group(id);
    const remembered = this.blockedNow(group, now);
    if (remembered) return remembered;
    const decision = await this.windows(group, now, true);
    const rate = rateView(decision.minute, decision.day);
    if (decision.outcome === 'allowed') return { limited: false, rate };
    const retryAfter = retryAfterSeconds(decision.minute, decision.day, now);
    if (this.blocked.size >= 100_000) this.blocked.clear();
    // Remembered until the window resets, to the millisecond: Retry-After is rounded up to whole
    // seconds, and a client that waits exactly X-RateLimit-Reset is let in then.
    this.blocked.set(group, { until: passesAgainAt(decision.minute, decision.day), rate });
    return { limited: true, rate, retryAfter };
  }
}
