import { clientGroup } from './throttle';

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
