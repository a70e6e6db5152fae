import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import proxyaddr from 'proxy-addr';
import { clientIpOf } from './client-ip';

/** Express's req.ip is what proxy-addr returns: the raw front's own walk must give the same. */
describe('clientIpOf', () => {
  const trusts: Array<boolean | number | string> = [
    false,
    true,
    0,
    1,
    2,
    'loopback',
    '10.0.0.0/8, 127.0.0.1',
    '192.168.0.1',
  ];
  const forwarded = [
    undefined,
    '',
    '203.0.113.7',
    '203.0.113.7, 10.1.2.3',
    ' 203.0.113.7 ,10.1.2.3,  192.168.0.1 ',
    '198.51.100.1,,10.0.0.9',
    'garbage, 10.0.0.1',
    '2001:db8::1, ::ffff:10.0.0.2',
  ];

  it('when X-Forwarded-For and the trust setting vary, then the address is the one proxy-addr gives', async () => {
    const seen: Array<{ ours: string; theirs: string; trust: unknown; xff: unknown }> = [];
    let trust: boolean | number | string = false;
    const server = createServer((req, res) => {
      const t = trust;
      const compiled =
        t === false
          ? () => false
          : t === true
            ? () => true
            : typeof t === 'number'
              ? (_a: string, i: number) => i < t
              : proxyaddr.compile(t.split(',').map((s) => s.trim()));
      seen.push({
        ours: clientIpOf(trust)(req.socket.remoteAddress, req.headers['x-forwarded-for']),
        theirs: proxyaddr(req, compiled),
        trust,
        xff: req.headers['x-forwarded-for'],
      });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      for (const t of trusts)
        for (const xff of forwarded) {
          trust = t;
          await fetch(`http://127.0.0.1:${port}/`, {
            headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
          });
        }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(seen).toHaveLength(trusts.length * forwarded.length);
    for (const s of seen) expect({ ...s, ours: s.theirs }).toEqual(s);
  });
});
