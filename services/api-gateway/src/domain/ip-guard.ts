import { isIPv6 } from 'node:net';
import {
  LocalFallbackLimiter,
  rateView,
  retryAfterSeconds,
  type LimitDecision,
  type RateView,
  type SharedLimiter,
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

export type GuardDecision =
  { limited: false; rate: RateView } | { limited: true; rate: RateView; retryAfter: number };

/**
 * The one per-IP guard (brute-force protection of everything reached without a valid API key),
 * with one failure policy: when the shared limiter does not answer, a per-instance limiter at
 * the same rate decides, so the guard never turns an outage into errors or an open door.
 * A group found over its limit is remembered until its window resets, so a client already at
 * 429 costs neither a Redis call nor a store lookup.
 */
export class IpGuard {
  private readonly blocked = new Map<string, { until: number; decision: GuardDecision }>();

  constructor(
    private readonly limiter: SharedLimiter,
    private readonly perMinute: number,
    private readonly fallback = new LocalFallbackLimiter(),
  ) {}

  /** The remembered 429 for this client, if it is still over its limit (no I/O). */
  blockedNow(ip: string, now = Date.now()): GuardDecision | undefined {
    const hit = this.blocked.get(clientGroup(ip));
    if (!hit) return undefined;
    if (hit.until > now) return { ...hit.decision, retryAfter: Math.ceil((hit.until - now) / 1000) };
    this.blocked.delete(clientGroup(ip));
    return undefined;
  }

  /** Counts one request of this client. */
  async count(ip: string, now = Date.now()): Promise<GuardDecision> {
    const remembered = this.blockedNow(ip, now);
    if (remembered) return remembered;
    const group = clientGroup(ip);
    const subject = { subject: `ip:${group}`, perMinute: this.perMinute, perDay: Number.MAX_SAFE_INTEGER };
    let decision: LimitDecision;
    try {
      decision = await this.limiter.check(subject, now);
    } catch {
      decision = this.fallback.check(subject, now);
    }
    if (decision.outcome === 'revoked') throw new Error('an IP subject has no revoked set');
    const rate = rateView(decision.minute, decision.day);
    if (decision.outcome === 'allowed') return { limited: false, rate };
    const retryAfter = retryAfterSeconds(decision.minute, decision.day, now);
    const limited: GuardDecision = { limited: true, rate, retryAfter };
    if (this.blocked.size >= 100_000) this.blocked.clear();
    this.blocked.set(group, { until: now + retryAfter * 1000, decision: limited });
    return limited;
  }
}
