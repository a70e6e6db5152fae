import type { SharedLimiter } from './rate-limit';
import { RequestThrottle, clientGroup } from './throttle';

describe('client groups of the per-IP limits', () => {
  it('when addresses are IPv4 or IPv4-mapped, then each is its own group', () => {
    expect(clientGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(clientGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });
  it('when IPv6 addresses share a /64, however written, then they are one group; another /64 is another', () => {
    const group = clientGroup('2001:db8:a:b::1');
    for (const ip of ['2001:0db8:000a:000b:ffff:ffff:ffff:ffff', '2001:db8:a:b:1:2:3:4', '2001:DB8:A:B::'])
      expect(clientGroup(ip)).toBe(group);
    expect(group).toBe('2001:db8:a:b::/64');
    expect(clientGroup('2001:db8:a:c::1')).not.toBe(group);
    expect(clientGroup('::1')).toBe('0:0:0:0::/64');
  });
});

describe('a client over its per-minute limit', () => {
  /** The shared limiter out of reach: the per-instance fallback decides, with the clock given. */
  const unreachable: SharedLimiter = {
    checkKey: () => Promise.reject(new Error('unreachable')),
    count: () => Promise.reject(new Error('unreachable')),
    peek: () => Promise.reject(new Error('unreachable')),
    markRevoked: () => Promise.reject(new Error('unreachable')),
    setPlan: () => Promise.reject(new Error('unreachable')),
  };

  it('when its window resets, then its next request passes at once, though Retry-After rounded up', async () => {
    const throttle = new RequestThrottle(unreachable, { name: 'ip', perMinute: 2 });
    const minute = Date.parse('2026-01-01T00:01:00Z');
    const late = minute - 500; // half a second before the window resets
    await throttle.count('203.0.113.7', late);
    await throttle.count('203.0.113.7', late);
    const refused = await throttle.count('203.0.113.7', late);
    expect(refused).toMatchObject({ limited: true, retryAfter: 1 });
    expect(refused.rate.reset).toBe(minute / 1000);
    expect(await throttle.count('203.0.113.7', minute - 1)).toMatchObject({ limited: true });
    expect(await throttle.count('203.0.113.7', minute)).toMatchObject({ limited: false });
  });
});
