import { DASHBOARD_ROUTE_LIST, ROUTE_LIST, type RouteOwner } from '@signal/contracts';
import { readCookie } from '../../http/cookies';

/**
 * Where a request goes, read from the route table: every route under one first segment of the
 * API (`/v1/signals`, `/v1/account`) has one owner, so that segment decides whether the gateway
 * serves the request itself (its Express routers) or passes it on to the owning service (the
 * relay). Paths match as Express matches them: in any ASCII case.
 */

/** A service behind the gateway: the owner of routes the gateway passes on. */
export type ServiceName = Exclude<RouteOwner, 'gateway'>;

/** A path the table gives to a service, and the route prefix it falls under (the metrics' label). */
export interface ServiceRoute {
  service: ServiceName;
  prefix: string;
}

/** A path's first segment (`/v1`) and its first two (`/v1/signals`), up to the query, lower-cased. */
function segmentsOf(url: string): { root: string; prefix: string | undefined } | undefined {
  if (url.charCodeAt(0) !== 0x2f) return undefined;
  const q = url.indexOf('?');
  const end = q === -1 ? url.length : q;
  const first = url.indexOf('/', 1);
  if (first === -1 || first >= end) return { root: asciiLower(url.slice(0, end)), prefix: undefined };
  const second = url.indexOf('/', first + 1);
  const prefixEnd = second === -1 || second > end ? end : second;
  return { root: asciiLower(url.slice(0, first)), prefix: asciiLower(url.slice(0, prefixEnd)) };
}

/**
 * Lower case for ASCII letters only: text with other characters is left as it is, so it never
 * equals a table path (`toLowerCase` would turn the Kelvin sign into `k`, which Express does not).
 */
function asciiLower(text: string): string {
  // eslint-disable-next-line no-control-regex -- the test is for anything outside ASCII
  return /[^\u0000-\u007f]/.test(text) ? text : text.toLowerCase();
}

/** The owner of each route prefix of the table, and of the dashboard's own API (the gateway's). */
const OWNERS: ReadonlyMap<string, RouteOwner> = (() => {
  const owners = new Map<string, RouteOwner>();
  const add = (path: string, owner: RouteOwner) => {
    const prefix = segmentsOf(path)?.prefix;
    if (prefix === undefined) throw new Error(`route ${path} has no prefix to route by`);
    const known = owners.get(prefix);
    if (known !== undefined && known !== owner)
      throw new Error(
        `routes under ${prefix} have two owners (${known}, ${owner}): the gateway cannot route them`,
      );
    owners.set(prefix, owner);
  };
  for (const route of ROUTE_LIST) add(route.path, route.owner);
  for (const route of DASHBOARD_ROUTE_LIST) add(route.path, 'gateway');
  return owners;
})();

/** The API's roots (`/v1`): the first segment of the table's paths. */
const ROOTS: ReadonlySet<string> = new Set(
  ROUTE_LIST.map((route) => segmentsOf(route.path)?.root).filter((root) => root !== undefined),
);

const isService = (owner: RouteOwner | undefined): owner is ServiceName =>
  owner !== undefined && owner !== 'gateway';

/** The service whose routes this path falls under, or undefined (the gateway's own, or none). */
export function serviceRouteOf(url: string): ServiceRoute | undefined {
  const prefix = segmentsOf(url)?.prefix;
  if (prefix === undefined) return undefined;
  const owner = OWNERS.get(prefix);
  return isService(owner) ? { service: owner, prefix } : undefined;
}

/**
 * Which requests take the API-key path: every method but OPTIONS under the API's root, except
 * the routes the gateway owns (login, account, the dashboard's API), and except dashboard-session
 * requests (a session cookie and no Authorization header) to the services' routes, which the
 * dashboard's Express router serves.
 */
export function takesApiPath(
  method: string,
  url: string,
  headers: { authorization?: string | string[]; cookie?: string | string[] },
  sessionCookie: string,
): boolean {
  if (method === 'OPTIONS') return false;
  const segments = segmentsOf(url);
  if (segments === undefined || !ROOTS.has(segments.root)) return false;
  const owner = segments.prefix === undefined ? undefined : OWNERS.get(segments.prefix);
  if (owner === 'gateway') return false;
  if (headers.authorization !== undefined) return true;
  const cookie = typeof headers.cookie === 'string' ? headers.cookie : undefined;
  return !(isService(owner) && readCookie(cookie, sessionCookie) !== undefined);
}
