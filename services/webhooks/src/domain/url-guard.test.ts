import type { LookupAddress } from 'node:dns';
import {
  PRODUCTION_POLICY,
  addressProblem,
  guardedLookupFor,
  urlProblem,
  type GuardPolicy,
  type Lookup,
} from './url-guard';

const PUBLIC_ADDRESSES = [
  '8.8.8.8',
  '1.1.1.1',
  '9.9.9.9',
  '93.184.216.34',
  '151.101.1.69',
  '100.63.255.255', // just below CGNAT
  '100.128.0.0', // just above CGNAT
  '172.15.255.255', // just below 172.16/12
  '172.32.0.0', // just above
  '192.169.0.1',
  '198.17.255.255', // just below benchmarking
  '198.20.0.1', // just above
  '223.255.255.254',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:82b::200e',
  '64:ff9b::808:808', // NAT64 of 8.8.8.8
  '2002:0808:0808::1', // 6to4 of 8.8.8.8
];

const REFUSED_ADDRESSES = [
  '0.0.0.0',
  '0.1.2.3',
  '10.0.0.1',
  '10.255.255.255',
  '100.64.0.1', // CGNAT
  '100.127.255.254',
  '127.0.0.1',
  '127.255.255.254',
  '169.254.169.254', // cloud metadata
  '169.254.0.1',
  '172.16.0.1',
  '172.31.255.255',
  '192.0.0.8',
  '192.0.2.1', // TEST-NET-1
  '192.88.99.1', // 6to4 relay
  '192.168.1.1',
  '198.18.0.1', // benchmarking
  '198.19.255.255',
  '198.51.100.7', // TEST-NET-2
  '203.0.113.9', // TEST-NET-3
  '224.0.0.1', // multicast
  '239.255.255.250',
  '240.0.0.1', // reserved
  '255.255.255.255',
  '::', // unspecified
  '::1', // loopback
  'fe80::1', // link-local
  'fe80::1%eth0',
  'fec0::1', // site-local
  'fc00::1', // ULA
  'fd00:ec2::254', // AWS metadata over IPv6
  'ff02::1', // multicast
  '::ffff:127.0.0.1', // IPv4-mapped
  '::ffff:8.8.8.8', // IPv4-mapped, even of a public address
  '::ffff:7f00:1',
  '::7f00:1', // IPv4-compatible
  '::127.0.0.1',
  '::ffff:0:7f00:1', // IPv4-translated
  '::ffff:0:127.0.0.1',
  '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
  '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
  '64:ff9b::10.0.0.1',
  '64:ff9b:1::808:808', // local-use NAT64
  '2002:7f00:0001::1', // 6to4 of 127.0.0.1
  '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
  '2002:0a00:0001::1', // 6to4 of 10.0.0.1
  '2001:0000:4136:e378:8000:63bf:80ff:fffe', // Teredo, client 127.0.0.1
  '2001:0:7f00:1::1', // Teredo, server 127.0.0.1
  '2001:db8::1', // documentation
  '3fff::1', // documentation (RFC 9637)
  '2001:2::1', // benchmarking
  '2001:10::1', // ORCHID
  '100::1', // discard
  '5f00::1', // SRv6
  '4000::1', // reserved, outside 2000::/3
  'not-an-address',
];

describe('the SSRF guard on literal addresses (production policy)', () => {
  it.each(PUBLIC_ADDRESSES)('when the address is %s (public), then it may be reached', (address) => {
    expect(addressProblem(address, PRODUCTION_POLICY)).toBeUndefined();
  });

  it.each(REFUSED_ADDRESSES)('when the address is %s, then it is refused', (address) => {
    expect(addressProblem(address, PRODUCTION_POLICY)).toEqual(expect.any(String));
  });

  it('when the table is counted, then it holds at least 60 cases with public ones included', () => {
    expect(PUBLIC_ADDRESSES.length + REFUSED_ADDRESSES.length).toBeGreaterThanOrEqual(60);
    expect(PUBLIC_ADDRESSES.length).toBeGreaterThanOrEqual(10);
  });
});

describe('the SSRF guard on subscription URLs (production policy)', () => {
  it.each([
    'https://hooks.example.com/h',
    'https://8.8.8.8/h',
    'https://[2606:4700:4700::1111]/h',
    'https://example.com:8443/path?q=1',
  ])('when the url is %s, then it is accepted', (url) => {
    expect(urlProblem(url, PRODUCTION_POLICY)).toBeUndefined();
  });

  it.each([
    'http://hooks.example.com/h', // not https
    'https://169.254.169.254/latest', // cloud metadata
    'https://[fd00:ec2::254]/latest',
    'https://127.0.0.1/h',
    'https://2130706433/h', // decimal 127.0.0.1
    'https://0177.0.0.1/h', // octal
    'https://0x7f.0.0.1/h', // hex
    'https://0x7f000001/h',
    'https://017700000001/h',
    'https://0xa9fea9fe/h', // hex 169.254.169.254
    'https://[::ffff:7f00:1]/h',
    'https://[::7f00:1]/h',
    'https://[::ffff:0:7f00:1]/h',
    'https://[64:ff9b::a9fe:a9fe]/h',
    'https://[2002:7f00:1::1]/h',
    'https://localhost/h',
    'https://app.localhost/h',
    'https://metadata.google.internal/h',
    'https://printer.local/h',
    'https://intranet/h', // single-label name
    'https://user:pass@hooks.example.com/h',
    'not a url',
    'ftp://hooks.example.com/h',
  ])('when the url is %s, then it is refused', (url) => {
    expect(urlProblem(url, PRODUCTION_POLICY)).toEqual(expect.any(String));
  });
});

describe('host names DNS and certificates can hold', () => {
  const label63 = 'a'.repeat(63);

  it.each([
    `https://${label63}.example.com/h`,
    `https://${[label63, label63, label63, 'a'.repeat(58)].join('.')}.io/h`, // 253 characters
    'https://my-hooks.example.com/h',
    'https://bücher.de/h', // its ASCII form: xn--bcher-kva.de
    'https://hooks.example.com./h', // the root's dot
  ])('when the host is %s, then it is accepted', (url) => {
    expect(urlProblem(url, PRODUCTION_POLICY)).toBeUndefined();
  });

  it.each([
    [`https://${'a'.repeat(64)}.example.com/h`, 'has a label longer than 63 characters (64)'],
    [
      `https://${[label63, label63, label63, 'a'.repeat(59)].join('.')}.io/h`,
      'is longer than 253 characters',
    ],
    ['https://hooks..example.com/h', 'has an empty label (two dots in a row)'],
    ['https://my_hooks.example.com/h', 'has an underscore, which no certificate for a host can name'],
    ['https://-hooks.example.com/h', 'has a label with a character other than letters'],
    ['https://hooks-.example.com/h', 'has a label with a character other than letters'],
    ['https://ho*oks.example.com/h', 'has a label with a character other than letters'],
    ['https://ho$oks.example.com/h', 'has a label with a character other than letters'],
  ])('when the host of %s cannot name a receiver, then it is refused saying why', (url, why) => {
    const problem = urlProblem(url, PRODUCTION_POLICY);
    expect(problem).toMatch(/^url host must be a host name: /);
    expect(problem).toContain(why);
  });
});

describe('the URL as written (it must show where it is POSTed)', () => {
  const dev: GuardPolicy = { allowLoopback: true };

  it.each([
    ['http:/127.0.0.1:3000/ok', 'http://127.0.0.1:3000/ok'],
    ['http:127.0.0.1:3000/ok', 'http://127.0.0.1:3000/ok'],
    ['http:///127.0.0.1:3000/ok', 'http://127.0.0.1:3000/ok'],
    ['http:/127.0.0.1:3000/a/b?q=1', 'http://127.0.0.1:3000/a/b?q=1'],
    ['https:/hooks.example.com/h', 'https://hooks.example.com/h'],
    ['https:\\\\hooks.example.com/h', 'https://hooks.example.com/h'],
  ])(
    'when the url %s has no // before its host, then it is refused as not written scheme://host, naming the whole URL %s',
    (url, href) => {
      for (const policy of [dev, PRODUCTION_POLICY]) {
        const problem = urlProblem(url, policy);
        expect(problem).toContain('url must be written as scheme://host');
        expect(problem).toContain(`would be POSTed to ${href}`);
      }
    },
  );

  it.each([
    ['https://ex%41mple.com/', 'example.com'],
    ['https://hooks%2eexample.com/h', 'hooks.example.com'],
    ['https://%31%32%37.0.0.1/h', '127.0.0.1'],
    ['https://134744072/h', '8.8.8.8'], // decimal 8.8.8.8
    ['https://0x08080808/h', '8.8.8.8'],
    ['https://010.8.8.8/h', '8.8.8.8'], // octal: not 10.8.8.8
    ['https://8.8.2056/h', '8.8.8.8'],
    ['https://ｅxample.com/h', 'example.com'], // a full-width e
    ['https://example。com/h', 'example.com'], // an ideographic full stop
    ['https://exa\u00admple.com/h', 'example.com'], // a soft hyphen, dropped
  ])(
    'when the host of %s is not written as the host it names, then it is refused naming %s',
    (url, named) => {
      const problem = urlProblem(url, PRODUCTION_POLICY);
      expect(problem).toMatch(/^url host must be written as the host it names: .* is read as /);
      expect(problem).toContain(`is read as ${named} `);
      expect(problem).toContain('no percent-encoding');
    },
  );

  it.each([
    'https://hooks.example.com/h',
    'HTTPS://Hooks.Example.COM/H', // scheme and host in any case
    'https://hooks.example.com:8443/caf%C3%A9?q=%20', // a port, a percent-encoded path and query
    'https://hooks.example.com/café', // non-ASCII letters in the path, sent percent-encoded
    'https://bücher.example/h', // an internationalised name
    'https://BÜCHER.example/h',
    'https://xn--bcher-kva.example/h',
    'https://hooks.example.com./h', // a trailing dot
    'https://8.8.8.8/h',
    'https://8.8.8.8./h',
    'https://[2606:4700:4700::1111]/h',
    'https://[2606:4700:4700:0:0:0:0:1111]:8443/h', // the same address, uncompressed
  ])('when the url %s shows the host it names, then it is accepted', (url) => {
    expect(urlProblem(url, PRODUCTION_POLICY)).toBeUndefined();
  });

  it('when loopback receivers are allowed, then http://127.0.0.1 and http://[::1] written in full are still accepted', () => {
    expect(urlProblem('http://127.0.0.1:3000/ok', dev)).toBeUndefined();
    expect(urlProblem('http://[0:0:0:0:0:0:0:1]:3000/ok', dev)).toBeUndefined();
    expect(urlProblem('HTTP://LOCALHOST:3000/ok', dev)).toBeUndefined();
  });
});

describe('the development policy', () => {
  const dev: GuardPolicy = { allowLoopback: true };

  it('when loopback is allowed, then http loopback receivers are accepted', () => {
    expect(urlProblem('http://127.0.0.1:3000/h', dev)).toBeUndefined();
    expect(urlProblem('http://localhost:3000/h', dev)).toBeUndefined();
    expect(urlProblem('http://[::1]:3000/h', dev)).toBeUndefined();
  });

  it('when loopback is allowed, then private, link-local and plain-http public hosts stay refused', () => {
    expect(urlProblem('http://10.0.0.1/h', dev)).toEqual(expect.any(String));
    expect(urlProblem('https://169.254.169.254/latest', dev)).toEqual(expect.any(String));
    expect(urlProblem('https://192.168.1.1/h', dev)).toEqual(expect.any(String));
    expect(urlProblem('http://hooks.example.com/h', dev)).toEqual(expect.any(String));
    expect(addressProblem('fd00:ec2::254', dev)).toEqual(expect.any(String));
  });

  it('when an http URL to a public host is refused while loopback is allowed, then the message says http is for loopback only', () => {
    expect(urlProblem('http://hooks.example.com/h', dev)).toBe(
      'url must use https (http is accepted for loopback addresses only: localhost, 127.0.0.0/8, ::1)',
    );
    expect(urlProblem('http://hooks.example.com/h', PRODUCTION_POLICY)).toBe('url must use https');
  });
});

describe('which refusal an http URL gets', () => {
  const dev: GuardPolicy = { allowLoopback: true };

  it.each([
    ['http://10.0.0.1/x', '10.0.0.1'],
    ['http://192.168.1.1/x', '192.168.1.1'],
    ['http://169.254.169.254/latest', '169.254.169.254'],
    ['http://100.64.0.1/x', '100.64.0.1'],
    ['http://[fd00::1]/x', 'fd00::1'],
  ])(
    'when an http URL names a literal address in a refused range (%s), then the refusal says the address is not public, not "use https"',
    (url, address) => {
      for (const policy of [dev, PRODUCTION_POLICY]) {
        const problem = urlProblem(url, policy);
        expect(problem).toMatch(/^url must point to a public address: /);
        expect(problem).toContain(`${address} is not one`);
        expect(problem).not.toContain('https');
        // https would be refused the same way: the message names the real cause.
        expect(urlProblem(url.replace('http:', 'https:'), policy)).toBe(problem);
      }
    },
  );

  it('when an http URL names an internal host in production, then the refusal says the host is not public, not "use https"', () => {
    expect(urlProblem('http://localhost/x', PRODUCTION_POLICY)).toBe('url must point to a public host');
    expect(urlProblem('http://127.0.0.1/x', PRODUCTION_POLICY)).toMatch(
      /^url must point to a public address: /,
    );
    expect(urlProblem('http://printer.local/x', dev)).toBe('url must point to a public host');
  });

  it('when an http URL names a public host or address, then the refusal says to use https, which would fix it', () => {
    expect(urlProblem('http://8.8.8.8/x', PRODUCTION_POLICY)).toBe('url must use https');
    expect(urlProblem('http://[2606:4700:4700::1111]/x', PRODUCTION_POLICY)).toBe('url must use https');
    expect(urlProblem('http://8.8.8.8/x', dev)).toMatch(
      /^url must use https \(http is accepted for loopback/,
    );
    expect(urlProblem('https://8.8.8.8/x', PRODUCTION_POLICY)).toBeUndefined();
  });
});

describe('the connect-time lookup', () => {
  const resolverReturning =
    (...addresses: LookupAddress[]): Lookup =>
    (_host, _options, callback) =>
      callback(null, addresses);

  const lookupWith = (resolve: Lookup, policy: GuardPolicy, all: boolean) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((done) =>
      guardedLookupFor(policy, resolve)('hooks.example.com', { all }, (err, address) =>
        done({ err, address }),
      ),
    );

  it('when a name resolves to a public IPv4 address, then the production guard connects to it', async () => {
    const { err, address } = await lookupWith(
      resolverReturning({ address: '93.184.216.34', family: 4 }),
      PRODUCTION_POLICY,
      false,
    );
    expect(err).toBeNull();
    expect(address).toBe('93.184.216.34');
  });

  it('when a name resolves to public IPv4 and IPv6 addresses, then all are handed to the connection', async () => {
    const { err, address } = await lookupWith(
      resolverReturning({ address: '8.8.8.8', family: 4 }, { address: '2001:4860:4860::8888', family: 6 }),
      PRODUCTION_POLICY,
      true,
    );
    expect(err).toBeNull();
    expect(address).toHaveLength(2);
  });

  it('when any resolved address is internal (DNS rebinding), then the name is refused', async () => {
    const { err } = await lookupWith(
      resolverReturning({ address: '8.8.8.8', family: 4 }, { address: '169.254.169.254', family: 4 }),
      PRODUCTION_POLICY,
      false,
    );
    expect(err?.code).toBe('EBLOCKEDADDRESS');
  });

  it('when the exact address is allowed by a test, then only that address passes', async () => {
    const policy: GuardPolicy = { allowLoopback: false, allowAddresses: new Set(['127.0.0.1']) };
    expect(addressProblem('127.0.0.1', policy)).toBeUndefined();
    expect(addressProblem('127.0.0.2', policy)).toEqual(expect.any(String));
  });
});
