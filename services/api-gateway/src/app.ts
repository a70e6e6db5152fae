import type { RequestListener } from 'node:http';
import { allowHeaderFor } from '@signal/contracts';
import {
  bodyRefusalOf,
  createBaseApp,
  finishApp,
  hasBody,
  readinessTiming,
  refuseUnreadBodies,
  securityHeaderList,
  type HealthCheck,
  type InternalTokenCache,
  type HttpEntry,
  type Lifecycle,
  type Logger,
  type ReadinessTiming,
  type ServesWith,
} from '@signal/service-kit';
import type { Express } from 'express';
import { defaultPlan, type GatewayConfig } from './config';
import type { Plan } from './accounts/domain/records';
import { healthChecks, servesWith, type GatewayDependencies } from './dependencies';
import { authenticate, type AuthDeps, type AuthResult } from './edge/domain/authenticate.use-case';
import type { CreateKeyDeps } from './accounts/domain/create-key.use-case';
import type { PasswordLoginDeps } from './sessions/domain/password-login.use-case';
import { SESSION_COOKIE } from './sessions/domain/sessions';
import { readCookie } from './http/cookies';
import type { RequestThrottle } from './edge/domain/throttle';
import type { UsageLedger } from './edge/domain/usage';
import { accountRouter } from './accounts/http/account.router';
import { apiPath } from './edge/http/api-path';
import { serviceRouteOf, takesApiPath } from './edge/http/service-routes';
import { clientIpOf, trustProxySetting } from './edge/http/client-ip';
import {
  dashboardOptions,
  mountDashboard,
  sessionThrottle,
  type DashboardOptions,
} from './dashboard/http/dashboard';
import { docsRouter } from './api-docs/http/docs.router';
import { noStoreForSecrets } from './edge/http/no-store.middleware';
import { connectionLimit } from './edge/http/connection-limit';
import { boundBodyPast, lingerBeforeClose } from './edge/http/lingering-close';
import { MAX_API_BODY_BYTES, OWN_ROUTES_MAX_BODY_BYTES } from './http/upstream';
import { rateLimitHeaders } from './edge/http/rate-limit-headers';
import type { SharedLimiter } from './edge/domain/rate-limit';
import {
  rateHeadersOnProbes,
  rateHeadersOnly,
  rateHeadersOnUncountedErrors,
  unmatchedRequest,
} from './edge/http/throttle.middleware';
import { StreamFeed } from './stream/http/stream-feed';
import type { Upstream } from './http/upstream';
import type { OpenStreams } from './stream/domain/open-streams';

export interface GatewayAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  /** Which checks it can serve without (readiness "degraded"). */
  servesWith: ServesWith;
  /** How /readyz looks at the checks (config `READINESS_*`). */
  readiness?: ReadinessTiming;
  auth: AuthDeps;
  /**
   * How the API path authenticates (default: the key pipeline over `auth`). The gateway bench
   * passes one that admits every request, to measure what authentication and limits cost.
   */
  authenticate?: (authorization: string | undefined, ip: string) => Promise<AuthResult>;
  /** The per-address guard (also `auth.guard`): anonymous requests and failed credentials. */
  guard: RequestThrottle;
  /** Requests per minute of one account's sessions on the account routes. */
  sessionThrottle: RequestThrottle;
  /** The account use cases, wired to the edge's shared limiter (which also counts session requests). */
  accounts: CreateKeyDeps & { limiter: SharedLimiter };
  /** Passwords, login throttling and sessions (the account API and the dashboard). */
  logins: PasswordLoginDeps;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  upstreamTimeoutMs: number;
  /** Bytes of a response held for a client that is not reading before its connection is cut. */
  maxHeldResponseBytes: number;
  /** Open connections one client address may have on this process (none: no bound, behind a trusted proxy). */
  maxConnectionsPerClient?: number;
  /** The bound as configured for the whole gateway (what a refusal names). */
  announcedMaxConnections?: number;
  /** How long a connection with a request open may make no progress before it is cut. */
  stalledConnectionMs: number;
  /** Live streams open through this process. */
  streams: OpenStreams;
  /** A live stream with no bytes from the service this long is dead. */
  streamIdleMs: number;
  /** The process's one subscription to the signals service's stream (live streams share it). */
  feed: StreamFeed;
  trustProxy: boolean | number | string;
  publicUrl?: string;
  /** The plan new accounts get (the document states it). */
  defaultPlan: Plan;
  usage?: UsageLedger;
  /** The dashboard (/dashboard, /v1/dashboard, session access to the public routes). */
  dashboard?: DashboardOptions;
}

/** The auth pipeline every credential on an API key's path meets (the bench may pass its own). */
const authenticateOf = (deps: GatewayAppDeps) =>
  deps.authenticate ??
  ((authorization: string | undefined, ip: string) => authenticate(deps.auth, authorization, ip));

/** How long a probe waits for its rate-limit headers before it answers without them. */
const PROBE_HEADERS_WITHIN_MS = 100;

/** The Express app: login, account keys, docs, dashboard, health, and every error envelope. */
export function buildApp(deps: GatewayAppDeps): Express {
  const headersOnly = rateHeadersOnly(deps.guard);
  const app = createBaseApp({
    service: 'api-gateway',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    servesWith: deps.servesWith,
    readiness: deps.readiness,
    trustProxy: deps.trustProxy,
    parseJson: false,
    // The public paths of every service: the gateway is where clients ask.
    allowFor: allowHeaderFor('gateway', 'signals', 'stats', 'webhooks'),
    // An OPTIONS answer names a public path's methods, what the OpenAPI document says: like the
    // docs pages it carries the address's rate headers and counts nothing, so a client with a
    // valid key is never refused it for what others sent from its address.
    beforeOptions: headersOnly,
    beforeHealth: rateHeadersOnProbes(deps.guard, PROBE_HEADERS_WITHIN_MS),
  });
  // Every route here takes JSON or nothing: a body of another type, or declared larger than its
  // route takes, is refused before a byte of it is read, whatever the path.
  app.use(refuseUnreadBodies((req) => maxBodyOf(req.url)));
  app.use(noStoreForSecrets());
  app.use(docsRouter(headersOnly, deps.defaultPlan, deps.publicUrl));
  app.use(accountRouter(deps.accounts, deps.logins, deps.guard, deps.sessionThrottle));
  if (deps.dashboard)
    mountDashboard(
      app,
      {
        accounts: deps.accounts,
        logins: deps.logins,
        addressGuard: deps.guard,
        sessionThrottle: deps.sessionThrottle,
        upstreams: deps.upstreams,
        tokens: deps.tokens,
        upstreamTimeoutMs: deps.upstreamTimeoutMs,
        maxHeldResponseBytes: deps.maxHeldResponseBytes,
        streams: deps.streams,
        streamIdleMs: deps.streamIdleMs,
        feed: deps.feed,
      },
      deps.dashboard,
    );
  // Whatever no route took (a path outside the API, a method a route lacks) still responds with
  // the rate-limit headers every response carries (docs/api.md): counted against the client's IP
  // like any request without a usable key — so probing for routes is throttled too — or, with an
  // API key, against its account, as on the API's routes. /healthz and /readyz carry them
  // counting nothing (counting probes could rate-limit a node's kubelet into restarting the
  // gateway).
  app.use(
    unmatchedRequest(deps.guard, authenticateOf(deps), deps.usage, {
      // A dashboard session's request outside the routes (a mistyped link) is its own, as on
      // the dashboard's routes; an invalid cookie is no credential, and Redis down none either.
      accountOf: async (req) => {
        const token = readCookie(req.header('cookie'), SESSION_COOKIE);
        if (!token) return undefined;
        const check = await deps.logins.sessions.verify('cookie', token);
        return check.ok ? check.value.accountId : undefined;
      },
      throttle: deps.sessionThrottle,
    }),
  );
  app.use(rateHeadersOnUncountedErrors(deps.guard));
  return finishApp(app, deps.logger);
}

/**
 * The largest body a request to the Express app's routes takes: a service's route (a dashboard
 * session's request, which the session relay forwards) or the gateway's own.
 */
const maxBodyOf = (url: string | undefined): number =>
  serviceRouteOf(url ?? '/') ? MAX_API_BODY_BYTES : OWN_ROUTES_MAX_BODY_BYTES;

/**
 * The only public entry point, on node:http. Requests with an API key for the services' routes
 * take the lean API path (one auth pipeline call, then undici to the owning service);
 * everything else is the Express app's. A connection over its client's bound is refused on its
 * first request.
 */
export function buildGateway(deps: GatewayAppDeps): HttpEntry {
  const securityHeaders = securityHeaderList();
  const api = apiPath({
    authenticate: authenticateOf(deps),
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    timeoutMs: deps.upstreamTimeoutMs,
    maxHeldBytes: deps.maxHeldResponseBytes,
    usage: deps.usage,
    clientIp: clientIpOf(deps.trustProxy),
    securityHeaders,
    logger: deps.logger,
    streams: deps.streams,
    streamIdleMs: deps.streamIdleMs,
    feed: deps.feed,
  });
  const app = buildApp(deps);
  const connections = connectionLimit(
    deps.maxConnectionsPerClient,
    deps.guard,
    securityHeaders,
    deps.announcedMaxConnections,
  );
  const route =
    (continued: boolean): RequestListener =>
    (req, res) => {
      // A body refused before it is read whole still lets its client read the refusal.
      if (hasBody(req.headers)) lingerBeforeClose(req);
      if (connections.refuses(req, res)) return;
      // An absolute-form target (RFC 9112 §3.2.2) is served as its path and query.
      if (req.url !== undefined && /^https?:\/\//i.test(req.url)) req.url = originForm(req.url);
      if (takesApiPath(req.method ?? 'GET', req.url ?? '', req.headers, SESSION_COOKIE))
        return api.handle(req, res);
      // An upload announced with Expect: 100-continue: the API path invites the body only once
      // the request passed auth, limits and the body checks; Express's routes once its head
      // passed theirs (a refused one gets its refusal instead).
      if (continued && !bodyRefusalOf(req.headers, maxBodyOf(req.url))) res.writeContinue();
      // A body with no declared length is read up to the limit, and past it only as far as a
      // lingering close reads.
      if (hasBody(req.headers)) boundBodyPast(req, maxBodyOf(req.url));
      app(req, res);
    };
  return {
    listener: route(false),
    checkContinue: route(true),
    onConnection: connections.onConnection,
    stalledMs: deps.stalledConnectionMs,
    onClose: () => {
      deps.streams.endAll();
      deps.feed.close();
    },
    // A request node:http cannot parse (oversized headers, say) still carries the rate-limit
    // headers, counted against its address like any request without a usable credential.
    unparsableHeaders: async (remoteAddress) => {
      const decision = await deps.guard.count(remoteAddress ?? '');
      const flat = rateLimitHeaders(decision.rate);
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
      return pairs;
    },
  };
}

/** The path and query of an absolute URL. */
function originForm(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return url;
  }
}

/** The subject of the feed's internal token: the gateway itself, not an account. */
const FEED_SUBJECT = 'api-gateway';

/** The gateway as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: GatewayConfig,
  deps: GatewayDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
  overrides: Pick<GatewayAppDeps, 'authenticate'> = {},
): HttpEntry {
  return buildGateway({
    ...overrides,
    logger,
    lifecycle,
    checks: healthChecks(deps),
    servesWith: servesWith(deps, config.KNOWN_KEY_WINDOW_MS),
    readiness: readinessTiming(config),
    auth: deps.auth,
    guard: deps.auth.guard,
    sessionThrottle: sessionThrottle(deps),
    accounts: deps.accounts,
    logins: deps.logins,
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    maxHeldResponseBytes: config.MAX_HELD_RESPONSE_BYTES,
    // Behind a trusted proxy every connection comes from the proxy: it bounds its clients. With
    // several processes on one port (node:cluster hands connections out in turn), each holds
    // its share of the bound.
    maxConnectionsPerClient:
      config.TRUST_PROXY === 'false'
        ? Math.max(1, Math.ceil(config.CLIENT_MAX_CONNECTIONS / config.GATEWAY_WORKERS))
        : undefined,
    announcedMaxConnections: config.CLIENT_MAX_CONNECTIONS,
    stalledConnectionMs: config.STALLED_CONNECTION_MS,
    streams: deps.streams,
    streamIdleMs: config.STREAM_IDLE_TIMEOUT_MS,
    feed: new StreamFeed({
      upstream: deps.upstreams.signals,
      // The feed is the gateway's, not any account's: its token names the gateway.
      token: () => deps.tokens.get(deps.upstreams.signals.audience, FEED_SUBJECT),
      idleTimeoutMs: config.STREAM_IDLE_TIMEOUT_MS,
      headersTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
      heartbeatMs: config.STREAM_HEARTBEAT_MS,
      maxBufferedBytes: config.STREAM_MAX_BUFFERED_BYTES,
      logger,
    }),
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    publicUrl: config.PUBLIC_URL,
    defaultPlan: defaultPlan(config),
    usage: deps.usage,
    dashboard: dashboardOptions(config, deps),
  });
}
