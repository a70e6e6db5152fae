import type { Express } from 'express';
import { defaultPlan, type GatewayConfig } from '../../config';
import type { Plan } from '../../accounts/domain/records';
import { RequestThrottle, clientGroup } from '../../edge/domain/throttle';
import { rateHeadersOnly } from '../../edge/http/throttle.middleware';
import type { UsageLedger } from '../../edge/domain/usage';
import { dashboardApiRouter, type DashboardApiDeps } from './dashboard-api.router';
import { dashboardPages } from './dashboard-pages';

export interface DashboardOptions {
  usage: UsageLedger;
  signupEnabled: boolean;
  defaultPlan: Plan;
  /** Sign-up attempts per client address. */
  signupThrottle: RequestThrottle;
}

/** What the dashboard's throttles and usage read from the gateway's shared parts. */
export interface DashboardSources {
  auth: { limiter: ConstructorParameters<typeof RequestThrottle>[0] };
  usage: UsageLedger;
}

/** Sign-up is open by default outside production; production opens it only with SIGNUP_ENABLED=true. */
export function signupEnabled(config: Pick<GatewayConfig, 'SIGNUP_ENABLED' | 'NODE_ENV'>): boolean {
  if (config.SIGNUP_ENABLED !== undefined) return config.SIGNUP_ENABLED === 'true';
  return config.NODE_ENV !== 'production';
}

/** Requests per minute one session (dashboard cookie or API login token) may make to account routes. */
export const sessionThrottle = (deps: DashboardSources): RequestThrottle =>
  new RequestThrottle(deps.auth.limiter, { name: 'session', perMinute: 600 });

export function dashboardOptions(config: GatewayConfig, deps: DashboardSources): DashboardOptions {
  return {
    usage: deps.usage,
    signupEnabled: signupEnabled(config),
    defaultPlan: defaultPlan(config),
    signupThrottle: new RequestThrottle(deps.auth.limiter, {
      name: 'signup',
      perMinute: config.SIGNUPS_PER_ADDRESS_PER_MINUTE,
      perDay: config.SIGNUPS_PER_ADDRESS_PER_DAY,
      group: clientGroup,
    }),
  };
}

/** What the dashboard's API needs besides its own options: the gateway's shared parts. */
export type DashboardShared = Omit<
  DashboardApiDeps,
  'usage' | 'signupEnabled' | 'defaultPlan' | 'signupThrottle'
>;

/** The dashboard's API (and its session access to the services' routes) and its pages. */
export function mountDashboard(app: Express, shared: DashboardShared, options: DashboardOptions): void {
  app.use(dashboardApiRouter({ ...shared, ...options }));
  app.use(dashboardPages(rateHeadersOnly(shared.addressGuard)));
}
