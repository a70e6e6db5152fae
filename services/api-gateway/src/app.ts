import type { RequestListener } from 'node:http';
import { tracingConfigured } from '@signal/telemetry';
import {
  createBaseApp,
  finishApp,
  readinessTiming,
  securityHeaderList,
  type HealthCheck,
  type InternalTokenCache,
  KEEP_ALIVE_TIMEOUT_MS,
  metrics,
  type HttpEntry,
  type Lifecycle,
  type Logger,
  type ReadinessTiming,
  type ServesWith,
} from '@signal/service-kit';
import type { Express } from 'express';
import { defaultPlan, type GatewayConfig } from './config';
import type { Plan } from './data/account.model';
import { healthChecks, servesWith, type GatewayDependencies } from './dependencies';
import { authenticate, type AuthDeps, type AuthResult } from './domain/authenticate.use-case';
import type { CreateKeyDeps } from './domain/create-key.use-case';
import type { PasswordLoginDeps } from './domain/password-login.use-case';
import { SESSION_COOKIE } from './domain/sessions';
import type { RequestThrottle } from './domain/throttle';
import type { UsageLedger } from './domain/usage';
import { accountRouter } from './http/account.router';
import { apiPath, takesApiPath } from './http/api-path';
import { clientIpOf, trustProxySetting } from './http/client-ip';
import { dashboardOptions, mountDashboard, type DashboardOptions } from './http/dashboard';
import { docsRouter } from './http/docs.router';
import { noStoreForSecrets } from './http/no-store.middleware';
import { RawFront } from './http/raw-front';
import { ipGuard } from './http/throttle.middleware';
import type { Upstream } from './http/upstream';

export interface GatewayAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  /** Which checks it can serve without (readiness "degraded"). */
  servesWith: ServesWith;
  /** How /readyz looks at the checks (config `READINESS_*`). */
  readiness?: ReadinessTiming;
  auth: AuthDeps;
  /** The per-IP guard (also `auth.guard`). */
  guard: RequestThrottle;
  accounts: CreateKeyDeps;
  /** Passwords, login throttling and sessions (the account API and the dashboard). */
  logins: PasswordLoginDeps;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  upstreamTimeoutMs: number;
  trustProxy: boolean | number | string;
  publicUrl?: string;
  /** The plan new accounts get (the document states it). */
  defaultPlan: Plan;
  usage?: UsageLedger;
  /** The dashboard (/dashboard, /v1/dashboard, session access to the public routes). */
  dashboard?: DashboardOptions;
  /** Benchmarks only (refused in production): every API request as this account, no auth, no limits. */
  benchAuthOffAccount?: string;
  /** Benchmarks only (refused in production): the API path behind Express's middleware stack. */
  benchApiPathViaExpress?: boolean;
  /** The API path's requests read by the raw front (config `API_FRONT`, off with tracing). */
  rawFront?: boolean;
}

/**
 * The Express app: login, account keys, docs, dashboard, health, and every error envelope.
 * `apiRoutes` mounts more routes before the 404 (the benchmark of the API path on Express).
 */
export function buildApp(deps: GatewayAppDeps, apiRoutes?: RequestListener): Express {
  const guard = ipGuard(deps.guard);
  const app = createBaseApp({
    service: 'api-gateway',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    servesWith: deps.servesWith,
    readiness: deps.readiness,
    trustProxy: deps.trustProxy,
    parseJson: false,
    beforeOptionsRefused: guard,
  });
  app.use(noStoreForSecrets());
  app.use(docsRouter(guard, deps.defaultPlan, deps.publicUrl));
  app.use(accountRouter(deps.accounts, deps.logins, guard));
  if (deps.dashboard) mountDashboard(app, deps, guard, deps.dashboard);
  if (apiRoutes) app.use('/v1', (req, res) => apiRoutes(req, res));
  // Whatever no route took (a path outside the API, OPTIONS, a method a route lacks) still
  // answers with the rate-limit headers every response carries (spec, Limits 1), counted against
  // the client's IP like any request without a usable key — so probing for routes is throttled
  // too. Only /healthz and /readyz answer without them: probes are the orchestrator's, not a
  // client's, and counting them could rate-limit a node's kubelet into restarting the gateway.
  app.use(guard);
  return finishApp(app, deps.logger);
}

const BENCH_RATE = { limit: 0, remaining: 0, reset: 0 };

/**
 * The only public entry point. Requests with an API key for the services' routes take the lean
 * API path (node:http, one auth pipeline call, streamed to the owning service); everything
 * else is the Express app's.
 */
export function buildGateway(deps: GatewayAppDeps): HttpEntry {
  const bench = deps.benchAuthOffAccount;
  const securityHeaders = securityHeaderList();
  const api = apiPath({
    authenticate: bench
      ? async (): Promise<AuthResult> => ({ ok: true, accountId: bench, keyId: 'bench', rate: BENCH_RATE })
      : (authorization, ip) => authenticate(deps.auth, authorization, ip),
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    timeoutMs: deps.upstreamTimeoutMs,
    usage: bench ? undefined : deps.usage,
    clientIp: clientIpOf(deps.trustProxy),
    securityHeaders,
    logger: deps.logger,
  });
  if (deps.benchApiPathViaExpress) {
    // Inside Express req.url is the rest after the mount: the API path gets the original back.
    return buildApp(deps, (req, res) => {
      if ('originalUrl' in req && typeof req.originalUrl === 'string') req.url = req.originalUrl;
      api.handle(req, res);
    });
  }
  const app = buildApp(deps);
  const listener: RequestListener = (req, res) =>
    takesApiPath(req.method ?? 'GET', req.url ?? '', req.headers, SESSION_COOKIE)
      ? api.handle(req, res)
      : app(req, res);
  // An upload announced with Expect: 100-continue: the API path invites the body only once the
  // request passed auth, limits and the body checks; Express's routes take theirs as Node would.
  const checkContinue: RequestListener = (req, res) => {
    if (takesApiPath(req.method ?? 'GET', req.url ?? '', req.headers, SESSION_COOKIE)) api.handle(req, res);
    else {
      res.writeContinue();
      app(req, res);
    }
  };
  if (!deps.rawFront) return { listener, checkContinue };
  const served = metrics.rawFront().labels('request');
  const handedOn = metrics.rawFront().labels('handoff');
  const front = new RawFront({
    serve: api.serve,
    takes: (head) => takesApiPath(head.method, head.url, head.headers, SESSION_COOKIE),
    keepAliveMs: KEEP_ALIVE_TIMEOUT_MS,
    leadingHeaders: securityHeaders,
    onRequest: () => served.inc(),
    onHandOff: () => handedOn.inc(),
  });
  return { listener, front, checkContinue };
}

/** The gateway as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: GatewayConfig,
  deps: GatewayDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
): HttpEntry {
  return buildGateway({
    logger,
    lifecycle,
    checks: healthChecks(deps),
    servesWith: servesWith(deps, config.KNOWN_KEY_WINDOW_MS),
    readiness: readinessTiming(config),
    auth: deps.auth,
    guard: deps.auth.guard,
    accounts: deps.accounts,
    logins: deps.logins,
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    publicUrl: config.PUBLIC_URL,
    defaultPlan: defaultPlan(config),
    usage: deps.usage,
    dashboard: config.BENCH_AUTH_OFF_ACCOUNT ? undefined : dashboardOptions(config, deps),
    benchAuthOffAccount: config.BENCH_AUTH_OFF_ACCOUNT,
    benchApiPathViaExpress: config.BENCH_API_PATH_VIA_EXPRESS,
    rawFront: config.API_FRONT === 'raw' && !config.BENCH_API_PATH_VIA_EXPRESS && !tracingConfigured(config),
  });
}
