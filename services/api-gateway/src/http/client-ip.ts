import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';

/** The TRUST_PROXY setting as Express reads it: true, false, a hop count, or addresses/subnets. */
export function trustProxySetting(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return /^\d+$/.test(value) ? Number(value) : value;
}

/**
 * The client's address as Express's `req.ip` gives it for the same trust setting (proxy-addr,
 * Express's own), for the paths that run without Express.
 */
export function clientIpOf(trust: boolean | number | string): (req: IncomingMessage) => string {
  if (trust === false) return (req) => req.socket.remoteAddress ?? '';
  const trusted =
    trust === true
      ? () => true
      : typeof trust === 'number'
        ? (_addr: string, i: number) => i < trust
        : proxyaddr.compile(trust.split(',').map((s) => s.trim()));
  return (req) => proxyaddr(req, trusted);
}
