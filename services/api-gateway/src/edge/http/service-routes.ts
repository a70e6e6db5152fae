import { DASHBOARD_ROUTE_LIST, ROUTE_LIST, type RouteOwner } from '@signal/contracts';
import { pathOfTarget } from '@signal/service-kit';
import { readCookie } from '../../http/cookies';

/**
 * Where a request goes, read from the route table: every route under one first segment of the
 * API (`/v1/signals`, `/v1/account`) has one owner, so that segment decides whether the gateway
 * serves the request itself (its Express routers) or passes it on to the owning service (the
 * relay). Paths match as Express matches them: in any ASCII case.
 */

/** A service behind the gateway: the owner of routes the gateway passes on. */
export type ServiceName = Exclude<RouteOwner, 'gateway'>;

/** A path the table gives to a service, and the route prefix it falls under. */
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

/** A service route of the table as the metrics label it: its path's segments, `undefined` for a parameter. */
interface LabelledRoute {
  segments: ReadonlyArray<string | undefined>;
  /** The path in Express's form (`/v1/signals/:signal_id`), as the gateway's own routes are labelled. */
  label: string;
}

/**
 * The service routes by prefix, each list with literal segments before parameters, so that
 * `/v1/signals/stream` is told from `/v1/signals/{signal_id}`.
 */
const LABELLED: ReadonlyMap<string, readonly LabelledRoute[]> = (() => {
  const byPrefix = new Map<string, LabelledRoute[]>();
  for (const route of ROUTE_LIST) {
    const prefix = segmentsOf(route.path)?.prefix;
    if (prefix === undefined || !isService(route.owner)) continue;
    const parts = route.path.split('/');
    const segments = parts.map((part) => (part.startsWith('{') ? undefined : part.toLowerCase()));
    const label = parts.map((part) => (part.startsWith('{') ? `:${part.slice(1, -1)}` : part)).join('/');
    const list = byPrefix.get(prefix) ?? [];
    if (!list.some((known) => known.label === label)) list.push({ segments, label });
    byPrefix.set(prefix, list);
  }
  const parameters = (r: LabelledRoute) => r.segments.filter((s) => s === undefined).length;
  for (const list of byPrefix.values()) list.sort((a, b) => parameters(a) - parameters(b));
  return byPrefix;
})();

/**
 * The metrics label of a path under a service's prefix: the table route it matches
 * (`/v1/signals/stream`, `/v1/webhooks/:webhook_id/deliveries`), or `unmatched` (the service
 * responds 404). A bounded set: never the path itself.
 */
export function routeLabelOf(url: string, prefix: string): string {
  const routes = LABELLED.get(prefix);
  if (!routes) return 'unmatched';
  const parts = asciiLower(pathOfTarget(url)).split('/');
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue;
    let matches = true;
    for (let i = 0; i < parts.length && matches; i++) {
      const literal = route.segments[i];
      matches = literal === undefined ? parts[i] !== '' : literal === parts[i];
    }
    if (matches) return route.label;
  }
  return 'unmatched';
}

/**
 * Which requests take the API-key path: every method but OPTIONS under the API's root, except
 * the routes the gateway owns (login, account, the dashboard's API), and except dashboard-session
 * requests (a session cookie and no Authorization header) to the services' routes, which the
 * dashboard's Express router serves, or to a path no route owns.
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
  // With a session, a path no route owns goes to the Express app's 404 too, as an API key's gets
  // a 404 after its check: the key path would answer it 401 "missing API key", and the dashboard
  // would take that for its session's end.
  return !((owner === undefined || isService(owner)) && readCookie(cookie, sessionCookie) !== undefined);
}
