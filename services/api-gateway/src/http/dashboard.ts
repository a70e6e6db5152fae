import type { Logger } from '@signal/service-kit';
import type { Express, RequestHandler } from 'express';
import type { GatewayAppDeps } from '../app';
import type { GatewayConfig } from '../config';
import type { Plan } from '../data/account.model';
import type { GatewayDependencies } from '../dependencies';
import { SessionStore } from '../domain/dashboard-session';
import { UsageStore } from '../domain/usage';
import { dashboardApiRouter } from './dashboard-api.router';
import { dashboardPages } from './dashboard-pages';
import { usageRecorder } from './usage.middleware';

export interface DashboardOptions {
  sessions: SessionStore;
  usage: UsageStore;
  signupEnabled: boolean;
  defaultPlan: Plan;
  sessionPerMinute: number;
  logger: Logger;
}

/** Sign-up is open by default outside production; production opens it only with SIGNUP_ENABLED=true. */
export function signupEnabled(config: Pick<GatewayConfig, 'SIGNUP_ENABLED' | 'NODE_ENV'>): boolean {
  if (config.SIGNUP_ENABLED !== undefined) return config.SIGNUP_ENABLED === 'true';
  return config.NODE_ENV !== 'production';
}

export function dashboardOptions(
  config: GatewayConfig,
  deps: GatewayDependencies,
  logger: Logger,
): DashboardOptions {
  return {
    sessions: new SessionStore(
      config.SESSION_JWT_SECRET,
      config.SESSION_TTL_SECONDS,
      deps.redis,
      config.REDIS_PREFIX,
    ),
    usage: new UsageStore(deps.redis, config.REDIS_PREFIX),
    signupEnabled: signupEnabled(config),
    defaultPlan: { per_minute: config.DEFAULT_PLAN_PER_MINUTE, per_day: config.DEFAULT_PLAN_PER_DAY },
    sessionPerMinute: 600,
    logger,
  };
}

/** Mounted before the API-key routes: usage counting, the dashboard's API and its pages. */
export function mountDashboard(
  app: Express,
  deps: GatewayAppDeps,
  guard: RequestHandler,
  options: DashboardOptions,
): void {
  app.use('/v1', usageRecorder(options.usage, deps.auth, options.logger));
  app.use(
    dashboardApiRouter(
      {
        accounts: deps.accounts,
        auth: deps.auth,
        sessions: options.sessions,
        usage: options.usage,
        signupEnabled: options.signupEnabled,
        defaultPlan: options.defaultPlan,
        sessionPerMinute: options.sessionPerMinute,
        upstreams: deps.upstreams,
        tokens: deps.tokens,
        upstreamTimeoutMs: deps.upstreamTimeoutMs,
      },
      guard,
    ),
  );
  app.use(dashboardPages(guard));
}
