import proxyaddr from 'proxy-addr';

/** The TRUST_PROXY setting as Express reads it: true, false, a hop count, or addresses/subnets. */
export function trustProxySetting(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** The client's address, from the connection's peer and the X-Forwarded-For it sent. */
export type ClientIp = (
  remoteAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
) => string;

/**
 * X-Forwarded-For's addresses, nearest hop first, as the `forwarded` package (proxy-addr's)
 * reads them: split at commas, spaces around an address dropped, empty entries skipped.
 */
function forwardedHops(header: string): string[] {
  const hops: string[] = [];
  let end = header.length;
  let start = header.length;
  for (let i = header.length - 1; i >= 0; i--) {
    const c = header.charCodeAt(i);
    if (c === 0x20) {
      if (start === end) start = end = i;
    } else if (c === 0x2c) {
      if (start !== end) hops.push(header.substring(start, end));
      start = end = i;
    } else start = i;
  }
  if (start !== end) hops.push(header.substring(start, end));
  return hops;
}

/**
 * The client's address as Express's `req.ip` gives it for the same trust setting: proxy-addr's
 * walk (the peer, then X-Forwarded-For from the nearest hop, for as long as each is trusted),
 * with proxy-addr's own compiled trust. A function of the peer and the header alone because the
 * API-key path runs on node:http without Express (no `req.ip`); the test holds it equal to
 * proxy-addr.
 */
export function clientIpOf(trust: boolean | number | string): ClientIp {
  if (trust === false) return (remote) => remote ?? '';
  const trusted: (addr: string, i: number) => boolean =
    trust === true
      ? () => true
      : typeof trust === 'number'
        ? (_addr, i) => i < trust
        : proxyaddr.compile(trust.split(',').map((s) => s.trim()));
  return (remote, forwardedFor) => {
    const header = typeof forwardedFor === 'string' ? forwardedFor : (forwardedFor?.join(',') ?? '');
    let addr = remote ?? '';
    if (!header) return addr;
    const hops = forwardedHops(header);
    for (let i = 0; i < hops.length; i++) {
      if (!trusted(addr, i)) return addr;
      addr = hops[i]!;
    }
    return addr;
  };
}
