import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { domainToUnicode } from 'node:url';

/**
 * The SSRF guard: which addresses a webhook may reach. Pure rules over parsed bytes, no
 * `net.BlockList`: a BlockList that holds `::ffff:0:0/96` matches every IPv4 address
 * against it (Node maps IPv4 checks into that range), so it would refuse every IPv4 host. Our
 * own parser also lets us look inside the IPv6 forms that embed an IPv4
 * address (mapped, compatible, translated, NAT64, 6to4, Teredo).
 */

/** What the guard lets through beside public addresses. Production: nothing. */
export interface GuardPolicy {
  /** Development only: loopback receivers (127.0.0.0/8, ::1) and http://. Never private or link-local. */
  allowLoopback: boolean;
  /**
   * Exact addresses to allow whatever their range — set in code by tests that run a delivery
   * with the production guard on against a local receiver; no configuration reaches it.
   */
  allowAddresses?: ReadonlySet<string>;
}

export const PRODUCTION_POLICY: GuardPolicy = { allowLoopback: false };

type Cidr4 = readonly [number, number]; // network as uint32, prefix bits

function ipv4ToInt(address: string): number | undefined {
  const parts = address.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

const v4 = (net: string, bits: number): Cidr4 => [ipv4ToInt(net) ?? 0, bits];

/** IANA special-purpose IPv4 ranges that are not globally reachable (RFC 6890 and successors). */
const REFUSED_V4: readonly Cidr4[] = [
  v4('0.0.0.0', 8), // "this network"
  v4('10.0.0.0', 8), // private
  v4('100.64.0.0', 10), // CGNAT shared space
  v4('127.0.0.0', 8), // loopback
  v4('169.254.0.0', 16), // link-local, cloud metadata
  v4('172.16.0.0', 12), // private
  v4('192.0.0.0', 24), // IETF protocol assignments
  v4('192.0.2.0', 24), // TEST-NET-1
  v4('192.31.196.0', 24), // AS112
  v4('192.52.193.0', 24), // AMT
  v4('192.88.99.0', 24), // 6to4 relay anycast (deprecated)
  v4('192.168.0.0', 16), // private
  v4('192.175.48.0', 24), // AS112 direct delegation
  v4('198.18.0.0', 15), // benchmarking
  v4('198.51.100.0', 24), // TEST-NET-2
  v4('203.0.113.0', 24), // TEST-NET-3
  v4('224.0.0.0', 4), // multicast
  v4('240.0.0.0', 4), // reserved, and 255.255.255.255 broadcast
];

function inCidr4(addr: number, [net, bits]: Cidr4): boolean {
  if (bits === 0) return true;
  const shift = 32 - bits;
  return Math.floor(addr / 2 ** shift) === Math.floor(net / 2 ** shift);
}

const isLoopback4 = (addr: number): boolean => inCidr4(addr, v4('127.0.0.0', 8));

/** 8 groups of 16 bits, or undefined when `address` is not IPv6 text. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    const embedded = ipv4ToInt(text.slice(lastColon + 1));
    if (embedded === undefined) return undefined;
    tail = [Math.floor(embedded / 65536), embedded % 65536];
    text = `${text.slice(0, lastColon + 1)}0`; // placeholder group, dropped below
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0] ?? '');
  const rest = halves.length === 2 ? parse(halves[1] ?? '') : [];
  if (!head || !rest) return undefined;
  if (tail.length > 0) (rest.length > 0 ? rest : head).pop();
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1 && given !== 8) return undefined;
  if (halves.length === 2 && given > 7) return undefined;
  const zeros = new Array<number>(8 - given).fill(0);
  return halves.length === 2 ? [...head, ...zeros, ...rest, ...tail] : [...head, ...rest, ...tail];
}

/** Does the address start with the given prefix (groups, bit length)? */
function hasPrefix6(g: number[], prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < 8 && bits > 0; i++) {
    const take = Math.min(16, bits);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if (((g[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false;
    bits -= take;
  }
  return true;
}

const int32 = (hi: number, lo: number): number => hi * 65536 + lo;

/** Why an IPv6 address is refused, or undefined when it is a public unicast address. */
function refusedV6(g: number[], policy: GuardPolicy): string | undefined {
  const allZeroTo = (n: number): boolean => g.slice(0, n).every((x) => x === 0);
  if (allZeroTo(7) && g[7] === 1) return policy.allowLoopback ? undefined : 'loopback';
  if (allZeroTo(8)) return 'unspecified';
  if (allZeroTo(5) && g[5] === 0xffff) return 'IPv4-mapped';
  if (allZeroTo(6)) return 'IPv4-compatible';
  if (allZeroTo(4) && g[4] === 0xffff && g[5] === 0) return 'IPv4-translated';
  // NAT64 well-known prefix: allowed only when the IPv4 address it carries is public.
  if (hasPrefix6(g, [0x64, 0xff9b, 0, 0, 0, 0], 96)) {
    return refusedV4(int32(g[6] ?? 0, g[7] ?? 0), PRODUCTION_POLICY) ? 'NAT64 of a refused IPv4' : undefined;
  }
  if (hasPrefix6(g, [0x64, 0xff9b, 1], 48)) return 'local-use NAT64';
  if (hasPrefix6(g, [0x2002], 16)) {
    return refusedV4(int32(g[1] ?? 0, g[2] ?? 0), PRODUCTION_POLICY) ? '6to4 of a refused IPv4' : undefined;
  }
  if (hasPrefix6(g, [0x2001, 0], 32)) {
    const server = int32(g[2] ?? 0, g[3] ?? 0);
    const client = int32((g[6] ?? 0) ^ 0xffff, (g[7] ?? 0) ^ 0xffff);
    return refusedV4(server, PRODUCTION_POLICY) || refusedV4(client, PRODUCTION_POLICY)
      ? 'Teredo of a refused IPv4'
      : undefined;
  }
  const refusedRanges: readonly [readonly number[], number, string][] = [
    [[0x2001, 0x0002, 0], 48, 'benchmarking'],
    [[0x2001, 0x0010], 28, 'ORCHID'],
    [[0x2001, 0x0020], 28, 'ORCHIDv2'],
    [[0x2001, 0x0db8], 32, 'documentation'],
    [[0x3fff, 0], 20, 'documentation'],
    [[0x2001, 0], 23, 'IETF protocol assignments'],
    [[0x5f00], 16, 'SRv6 SIDs'],
  ];
  for (const [prefix, bits, why] of refusedRanges) if (hasPrefix6(g, prefix, bits)) return why;
  // Everything outside global unicast 2000::/3: ULA fc00::/7 (fd00:ec2::254), link-local,
  // site-local fec0::/10, multicast, discard 100::/64, reserved.
  if (!hasPrefix6(g, [0x2000], 3)) return 'not global unicast';
  return undefined;
}

function refusedV4(addr: number, policy: GuardPolicy): string | undefined {
  if (policy.allowLoopback && isLoopback4(addr)) return undefined;
  return REFUSED_V4.some((c) => inCidr4(addr, c)) ? 'special-purpose IPv4' : undefined;
}

/** Why a literal address may not be reached, or undefined when it may. Non-addresses are refused. */
export function addressProblem(address: string, policy: GuardPolicy = PRODUCTION_POLICY): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '');
  if (policy.allowAddresses?.has(bare)) return undefined;
  const family = isIP(bare);
  if (family === 4) return refusedV4(ipv4ToInt(bare) ?? 0, policy);
  if (family === 6) {
    const groups = ipv6Groups(bare);
    return groups ? refusedV6(groups, policy) : 'not an address';
  }
  return 'not an address';
}

export const isBlockedAddress = (address: string, policy: GuardPolicy = PRODUCTION_POLICY): boolean =>
  addressProblem(address, policy) !== undefined;

const INTERNAL_NAME = /(^|\.)(localhost|local|internal|localdomain|home\.arpa|intranet|lan)$/;

/** Scheme, `//` and the authority as written: up to the path, query or fragment. */
const WRITTEN_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\]*)/;

/** The host as written in an authority: after any userinfo, before any port; brackets kept. */
function writtenHost(authority: string): string {
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (hostPort.startsWith('[')) {
    const end = hostPort.indexOf(']');
    return end < 0 ? hostPort : hostPort.slice(0, end + 1);
  }
  const colon = hostPort.indexOf(':');
  return colon < 0 ? hostPort : hostPort.slice(0, colon);
}

/** Is the host as written the host the parser names (`url.hostname`), up to letter case? */
function sameHost(written: string, named: string): boolean {
  if (written.includes('%')) return false;
  if (written.startsWith('[') && named.startsWith('[')) {
    // An IPv6 literal may be written in any of its forms: they name one address.
    const a = ipv6Groups(written.slice(1, -1));
    const b = ipv6Groups(named.slice(1, -1));
    return a !== undefined && b !== undefined && a.join(':') === b.join(':');
  }
  // eslint-disable-next-line no-control-regex -- ASCII is U+0000 to U+007F
  if (/^[\u0000-\u007f]*$/.test(written)) {
    const lower = written.toLowerCase();
    // The parser drops an IPv4 address's trailing dot (a name keeps its own): the same address.
    return lower === named || (isIP(named) === 4 && lower === `${named}.`);
  }
  // An internationalised name: as written (its letters in any case and composition), it must be
  // the Unicode form of the punycode name the parser makes; mappings that change the letters
  // (full-width forms, ideographic full stops, dropped soft hyphens) are not.
  return written.normalize('NFC').toLowerCase() === domainToUnicode(named);
}

/**
 * Why the URL as written does not show where it is POSTed, or undefined when it does. The URL
 * parser reads `http:/h/x`, `http:h/x` and `https:///h/x` as `http://h/x`, decodes a
 * percent-encoded host (`ex%41mple.com` is example.com), reads `2130706433` and `0x7f.1` as
 * dotted quads, and maps look-alike letters onto others: stored as sent, the URL shown would not
 * be the one POSTed to.
 */
function writtenProblem(raw: string, url: URL): string | undefined {
  const authority = WRITTEN_AUTHORITY.exec(raw)?.[1];
  if (!authority) {
    return `url must be written as scheme://host… (two slashes, then the host): as written it would be POSTed to ${url.href}`;
  }
  const written = writtenHost(authority);
  if (sameHost(written, url.hostname)) return undefined;
  const named =
    isIP(url.hostname) !== 0 || url.hostname.startsWith('[') ? url.hostname : domainToUnicode(url.hostname);
  return `url host must be written as the host it names: ${written} is read as ${named} (write the host with no percent-encoding, an IPv4 address as four decimal numbers)`;
}

/** A label of a host name: letters, digits and hyphens, neither first nor last a hyphen. */
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/**
 * Why a name (as the URL parser gives it: lower case, an internationalised one in its ASCII
 * form, no trailing dot) cannot name a receiver, or undefined. The URL parser takes names DNS
 * cannot hold (a label past 63 octets, an empty one) and characters no host name has
 * (RFC 1123: letters, digits, hyphens); an underscore, which DNS stores for other records, names
 * no host a publicly trusted certificate can cover (CA/Browser Forum, 2019). Stored, such a URL
 * would fail every delivery; refused, the client learns why at once.
 */
function hostNameProblem(host: string): string | undefined {
  if (host.length > 253) return 'is longer than 253 characters';
  for (const label of host.split('.')) {
    if (label.length === 0) return 'has an empty label (two dots in a row)';
    if (label.length > 63) return `has a label longer than 63 characters (${label.length})`;
    if (label.includes('_')) return 'has an underscore, which no certificate for a host can name';
    if (!HOST_LABEL.test(label))
      return 'has a label with a character other than letters, digits and hyphens, or a hyphen at its start or end';
  }
  return undefined;
}

/**
 * Creation-time check of a subscription URL: scheme, the URL as written, credentials, internal
 * names and literal addresses. Where it goes is checked before http is: a private address or an
 * internal name is refused as such, never with "use https", which would not make it reachable.
 * The WHATWG URL parser turns decimal, octal and hex IPv4 forms (`2130706433`, `0177.0.0.1`,
 * `0x7f.1`) into dotted quads; written so, the URL is refused, as it would not show the address
 * it is sent to. Names are checked again at connect time (guardedLookupFor), against DNS
 * rebinding.
 */
export function urlProblem(raw: string, policy: GuardPolicy = PRODUCTION_POLICY): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute URL';
  }
  // Where loopback receivers are allowed, http is too, for them only: say so, or the message
  // contradicts the http://127.0.0.1 URLs this installation accepts.
  const httpsOnly = policy.allowLoopback
    ? 'url must use https (http is accepted for loopback addresses only: localhost, 127.0.0.0/8, ::1)'
    : 'url must use https';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return httpsOnly;
  const written = writtenProblem(raw, url);
  if (written) return written;
  if (url.username || url.password) return 'url must not contain credentials';
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (isIP(host) !== 0) {
    const problem = addressProblem(host, policy);
    if (problem) return `url must point to a public address: ${host} is not one (${problem})`;
  } else if (!(host === 'localhost' && policy.allowLoopback)) {
    if (INTERNAL_NAME.test(host) || !host.includes('.')) return 'url must point to a public host';
    const problem = hostNameProblem(host);
    if (problem) return `url host must be a host name: ${host} ${problem}`;
  }
  // A public destination (or an allowed loopback one): only now would https be the fix.
  const loopbackTarget =
    policy.allowLoopback &&
    (host === 'localhost' || host === '::1' || (isIP(host) === 4 && isLoopback4(ipv4ToInt(host) ?? 0)));
  return url.protocol === 'http:' && !loopbackTarget ? httpsOnly : undefined;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export type Lookup = (hostname: string, options: object, callback: LookupCallback) => void;

/**
 * DNS lookup for outgoing deliveries that refuses any resolved address outside the policy, so
 * a name that resolves (or re-resolves, DNS rebinding) to an internal address is never
 * connected to. One refused address refuses the name: the connection could otherwise pick it.
 */
export function guardedLookupFor(policy: GuardPolicy, resolve: Lookup): Lookup {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = Array.isArray(addresses) ? addresses : [];
      const bad = list.find((a) => isBlockedAddress(a.address, policy));
      if (bad || list.length === 0) {
        const e: NodeJS.ErrnoException = new Error(`blocked address for ${hostname}`);
        e.code = 'EBLOCKEDADDRESS';
        return callback(e, []);
      }
      if ('all' in options && options.all === true) return callback(null, list);
      const first = list[0];
      if (!first) return callback(null, []);
      callback(null, first.address, first.family);
    });
  };
}
