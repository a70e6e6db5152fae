import { trustProxySetting, type GatewayConfig } from './config';
import { healthChecks, type GatewayDependencies } from './dependencies';
import { createBaseApp, finishApp, type HealthCheck, type Lifecycle, type Logger } from '@signal/service-kit';
import type { Express } from 'express';
import type { AccountDeps } from './domain/accounts.use-cases';
import type { AuthDeps } from './domain/authenticate.use-case';
import { accountRouter } from './http/account.router';
import { apiKeyAuth, ipRateLimit } from './http/auth.middleware';
import { docsRouter } from './http/docs.router';
import { dashboardOptions, mountDashboard, type DashboardOptions } from './http/dashboard';
import { noStoreForSecrets } from './http/no-store.middleware';
import { proxyTo, type InternalTokenCache, type Upstream } from './http/proxy';

export interface GatewayAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  auth: AuthDeps;
  accounts: AccountDeps;
  sessionSecret: string;
  sessionTtlSeconds: number;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  upstreamTimeoutMs: number;
  trustProxy: boolean | number | string;
  publicUrl?: string;
  /** The dashboard (/dashboard, /v1/dashboard, session access to the public routes) and usage counters. */
  dashboard?: DashboardOptions;
  benchAuthOffAccount?: string;
}

/**
 * The only public entry point. Own routes: login, account keys, docs. Everything else under
 * /v1 needs an API key, is rate limited per account, and is streamed to the owning service.
 */
export function buildApp(deps: GatewayAppDeps): Express {
  const app = createBaseApp({
    service: 'api-gateway',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    trustProxy: deps.trustProxy,
    parseJson: false,
  });
  const guard = ipRateLimit(deps.auth);
  app.use(noStoreForSecrets());
  app.use(docsRouter(guard, deps.publicUrl));
  app.use(accountRouter(deps.accounts, deps.sessionSecret, deps.sessionTtlSeconds, guard));
  if (deps.dashboard) mountDashboard(app, deps, guard, deps.dashboard);
  app.use(
    '/v1',
    deps.benchAuthOffAccount
      ? (_req, res, next) => {
          res.locals.accountId = deps.benchAuthOffAccount;
          next();
        }
      : apiKeyAuth(deps.auth),
  );
  const { signals, stats, webhooks } = deps.upstreams;
  app.use('/v1/signals', proxyTo(signals, deps.tokens, deps.upstreamTimeoutMs));
  app.use('/v1/stats', proxyTo(stats, deps.tokens, deps.upstreamTimeoutMs));
  app.use('/v1/webhooks', proxyTo(webhooks, deps.tokens, deps.upstreamTimeoutMs));
  return finishApp(app, deps.logger);
}

/** The app as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: GatewayConfig,
  deps: GatewayDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
): Express {
  return buildApp({
    logger,
    lifecycle,
    checks: healthChecks(deps),
    auth: deps.auth,
    accounts: deps.accounts,
    sessionSecret: config.SESSION_JWT_SECRET,
    sessionTtlSeconds: config.SESSION_TTL_SECONDS,
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    publicUrl: config.PUBLIC_URL,
    dashboard: config.BENCH_AUTH_OFF_ACCOUNT ? undefined : dashboardOptions(config, deps, logger),
    benchAuthOffAccount: config.BENCH_AUTH_OFF_ACCOUNT,
  });
}
