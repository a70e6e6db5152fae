import { createSecretKey, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  DASHBOARD_API_PATH,
  DASHBOARD_ROUTE_LIST,
  ROUTE_LIST,
  expressPath,
  generatedRouteModules,
  routePrefixes,
  type RouteOwner,
} from '@signal/contracts';
import { mountedRoutes } from '@signal/service-kit';
import { signalsRouter } from '../services/signals/src/http/signals.router';
import { statsRouter } from '../services/stats/src/http/stats.router';
import { webhooksRouter } from '../services/webhooks/src/http/webhooks.router';
import { accountRouter } from '../services/api-gateway/src/accounts/http/account.router';
import { RequestThrottle } from '../services/api-gateway/src/edge/domain/throttle';
import { takesApiPath } from '../services/api-gateway/src/edge/http/service-routes';
import { STREAM_ROUTE } from '../services/api-gateway/src/stream/http/live-streams';
import { dashboardApiRouter } from '../services/api-gateway/src/dashboard/http/dashboard-api.router';
import type { PasswordLoginDeps } from '../services/api-gateway/src/sessions/domain/password-login.use-case';

/**
 * Every route of the table is served by its owner: the owner's router has a handler for its
 * method and Express path (not only the 405 for other methods), mounted from the table's entry
 * itself (so its path parameters, query and body are read as the entry says), and the gateway's
 * key path takes every route a service owns. Building a router only captures its dependencies, so
 * each is a stand-in that fails the test if anything touches it while the routes are registered.
 */

/** A dependency the router must not use while it is built: any property read throws. */
function untouched<T extends object>(name: string): T {
  const target: T = Object.create(null);
  return new Proxy(target, {
    get: (_target, property) => {
      throw new Error(`${name}.${String(property)} was used while the routes were registered`);
    },
  });
}

/** A dependency the router may read `given` of while it is built, and nothing else. */
function untouchedBut<T extends object>(name: string, given: Partial<T>): T {
  const target: T = Object.create(null);
  return new Proxy(target, {
    get: (_target, property) => {
      if (Object.hasOwn(given, property)) return Reflect.get(given, property);
      throw new Error(`${name}.${String(property)} was used while the routes were registered`);
    },
  });
}

const internalJwtKey = createSecretKey(randomBytes(32));

/** An Express router, as the services' router functions return it. */
type Router = ReturnType<typeof statsRouter>;

/** A route as `method path`, its parameters named as the table names them. */
const shape = (method: string, expressRoute: string) => `${method} ${expressRoute}`;

/** The routes a router registers (method in lowercase), one entry per handler. */
function mounted(router: Router): Set<string> {
  const found = new Set<string>();
  for (const layer of router.stack) {
    if (!layer.route) continue;
    const methods: unknown = Reflect.get(layer.route, 'methods');
    if (typeof methods !== 'object' || methods === null) continue;
    for (const [method, on] of Object.entries(methods))
      // `_all` is the 405 for every other method, registered after the routes themselves.
      if (on === true && method !== '_all') found.add(shape(method, layer.route.path));
  }
  return found;
}

const routers: Record<RouteOwner, () => Router> = {
  signals: () => signalsRouter(untouched('reads'), internalJwtKey, untouched('streams')),
  stats: () => statsRouter(untouched('reads'), internalJwtKey),
  webhooks: () => webhooksRouter(untouched('subscriptions'), internalJwtKey),
  gateway: () =>
    accountRouter(
      untouched('accounts'),
      untouched('logins'),
      new RequestThrottle(untouched('limiter'), { name: 'address', perMinute: 60 }),
      new RequestThrottle(untouched('limiter'), { name: 'session', perMinute: 600 }),
    ),
};

/** The gateway's router of the dashboard's own API (and of the public routes with a session). */
const dashboardRouter = (): Router =>
  dashboardApiRouter({
    accounts: untouched('accounts'),
    logins: untouchedBut<PasswordLoginDeps>('logins', { sessions: untouched('sessions') }),
    usage: untouched('usage'),
    signupEnabled: true,
    defaultPlan: { per_minute: 60, per_day: 1000 },
    sessionThrottle: untouched('sessionThrottle'),
    addressGuard: untouched('addressGuard'),
    signupThrottle: untouched('signupThrottle'),
    upstreams: { signals: untouched('signals'), stats: untouched('stats'), webhooks: untouched('webhooks') },
    tokens: untouched('tokens'),
    upstreamTimeoutMs: 1000,
    maxHeldResponseBytes: 1024,
    streams: untouched('streams'),
    streamIdleMs: 1000,
    feed: untouched('feed'),
  });

const entry = (r: { method: string; path: string }) => shape(r.method, expressPath(r.path));

const OWNERS: RouteOwner[] = ['signals', 'stats', 'webhooks', 'gateway'];

/**
 * The routes whose handler reads its request itself rather than from the entry: the stream's
 * service reads the query in the gateway's form (`signalStreamInternalQuerySchema`), which adds
 * the gateway's own parameters to the public one.
 */
const READ_BY_THEIR_HANDLER = new Set(['streamSignals']);

/** The path a client sends for a route: each parameter filled in. */
const concretePath = (r: { path: string }) => r.path.replace(/\{[a-z_]+\}/g, 'x1');

describe('the route table', () => {
  it('when each owner builds its router, then every route the table gives it has a handler there', () => {
    for (const owner of OWNERS) {
      const served = mounted(routers[owner]());
      const expected = ROUTE_LIST.filter((r) => r.owner === owner).map(entry);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.filter((e) => !served.has(e))).toEqual([]);
    }
  });

  it('when each owner builds its router, then it mounts each of its routes once from the table entry itself', () => {
    for (const owner of OWNERS) {
      const fromTable = mountedRoutes(routers[owner]());
      const own = ROUTE_LIST.filter((r) => r.owner === owner);
      const expected = own.filter((r) => !READ_BY_THEIR_HANDLER.has(r.operationId));
      // The entry object, not a copy: whatever the table says of the route is what the router reads.
      expect(expected.filter((r) => fromTable.filter((m) => m === r).length !== 1).map(entry)).toEqual([]);
      expect(fromTable.filter((m) => !own.some((r) => r === m)).map((m) => `${m.method} ${m.path}`)).toEqual(
        [],
      );
    }
  });

  it('when a route a service owns is asked for with an API key, then the gateway takes it on the key path', () => {
    const services = ROUTE_LIST.filter((r) => r.owner !== 'gateway');
    expect(services.length).toBeGreaterThan(0);
    const refused = services.filter(
      (r) =>
        !takesApiPath(r.method.toUpperCase(), concretePath(r), { authorization: 'Bearer sk_x' }, 'session'),
    );
    expect(refused.map(entry)).toEqual([]);
  });

  it('when a route the gateway owns is asked for, then the key path leaves it to the Express routers', () => {
    const own = ROUTE_LIST.filter((r) => r.owner === 'gateway');
    const taken = own.filter((r) =>
      takesApiPath(r.method.toUpperCase(), concretePath(r), { authorization: 'Bearer sk_x' }, 'session'),
    );
    expect(taken.map(entry)).toEqual([]);
  });

  it('when the live stream route is asked for, then the gateway opens a stream for it and for no other route', () => {
    const streams = ROUTE_LIST.filter((r) => r.method === 'get' && STREAM_ROUTE.test(concretePath(r)));
    expect(streams.map((r) => r.operationId)).toEqual(['streamSignals']);
  });

  it('when the table changes, then the SDKs and the dashboard hold its generated copy (node scripts/route-paths.js)', () => {
    const root = path.join(__dirname, '..');
    const modules = generatedRouteModules();
    const stale = modules.filter(({ file, text }) => readFileSync(path.join(root, file), 'utf8') !== text);
    expect(modules.map((m) => m.file)).toEqual(
      expect.arrayContaining([
        'packages/sdk/src/generated/routes.ts',
        'packages/dashboard/src/generated/routes.ts',
        'packages/sdk-python/src/signal_sdk/routes.py',
      ]),
    );
    expect(stale.map((m) => m.file)).toEqual([]);
  });

  it('when the routers and the clients are read, then none writes a path of the table in a string of its own', () => {
    const root = path.join(__dirname, '..');
    const prefixes = [...OWNERS.flatMap((owner) => routePrefixes(owner)), DASHBOARD_API_PATH];
    // A quote, then one of the table's prefixes as a whole segment: `'/v1/webhooks`, `` `/v1/stats? ``.
    const literal = new RegExp(`['"\`](${prefixes.join('|')})(?![\\w-])`);
    const sources = (dir: string, ext = '.ts'): string[] =>
      readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith(ext) && !file.endsWith('.test.ts') && !file.startsWith('generated'))
        .map((file) => path.join(dir, file));
    const generated = new Set(generatedRouteModules().map((m) => m.file));
    const files = [
      'services/signals/src/http/signals.router.ts',
      'services/stats/src/http/stats.router.ts',
      'services/webhooks/src/http/webhooks.router.ts',
      'services/api-gateway/src/accounts/http/account.router.ts',
      'services/api-gateway/src/dashboard/http/dashboard-api.router.ts',
      ...sources('packages/sdk/src'),
      ...sources('packages/dashboard/src'),
      ...sources('packages/sdk-python/src/signal_sdk', '.py').filter((file) => !generated.has(file)),
    ];
    const written = files.flatMap((file) =>
      readFileSync(path.join(root, file), 'utf8')
        .split('\n')
        .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
        .filter(({ line }) => !/^\s*(\/\/|\*|\/\*|#)/.test(line) && literal.test(line))
        .map(({ where }) => where),
    );
    expect(files.length).toBeGreaterThan(10);
    expect(written).toEqual([]);
  });
});

describe("the dashboard's route table", () => {
  it('when the table is read, then every dashboard route lies under the dashboard prefix the gateway keeps for itself', () => {
    expect(DASHBOARD_ROUTE_LIST.length).toBeGreaterThan(0);
    expect(
      DASHBOARD_ROUTE_LIST.filter((r) => !r.path.startsWith(`${DASHBOARD_API_PATH}/`)).map(entry),
    ).toEqual([]);
    const taken = DASHBOARD_ROUTE_LIST.filter((r) =>
      takesApiPath(r.method.toUpperCase(), concretePath(r), { authorization: 'Bearer sk_x' }, 'session'),
    );
    expect(taken.map(entry)).toEqual([]);
  });

  it("when the gateway builds the dashboard's router, then it mounts each dashboard route once from the table entry itself", () => {
    const router = dashboardRouter();
    const fromTable = mountedRoutes(router);
    // The entry object, not a copy: whatever the table says of the route is what the router reads.
    expect(
      DASHBOARD_ROUTE_LIST.filter((r) => fromTable.filter((m) => m === r).length !== 1).map(entry),
    ).toEqual([]);
    expect(fromTable.filter((m) => !DASHBOARD_ROUTE_LIST.some((r) => r === m)).map(entry)).toEqual([]);
    const served = mounted(router);
    expect(DASHBOARD_ROUTE_LIST.map(entry).filter((e) => !served.has(e))).toEqual([]);
  });
});
