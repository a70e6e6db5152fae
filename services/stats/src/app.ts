import type { StatsConfig } from './config';
import { healthChecks, servesWith, type StatsDependencies } from './dependencies';
import { readinessTiming, serviceApp, type Lifecycle, type Logger, type ServiceAppParts } from '@signal/service-kit';
import type { KeyObject } from 'node:crypto';
import type { Express } from 'express';
import type { StatsReadDeps } from './domain/get-stats.use-case';
import { statsRouter } from './http/stats.router';

export interface StatsAppDeps extends ServiceAppParts {
  reads: StatsReadDeps;
  /** Checks the gateway's tokens (cannot make any). */
  internalJwtKey: KeyObject;
}

export function buildApp(deps: StatsAppDeps): Express {
  return serviceApp({ service: 'stats', ...deps }, statsRouter(deps.reads, deps.internalJwtKey));
}

/** The app as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: StatsConfig,
  deps: StatsDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
): Express {
  return buildApp({
    logger,
    lifecycle,
    checks: healthChecks(deps),
    servesWith,
    readiness: readinessTiming(config),
    reads: deps.reads,
    internalJwtKey: config.INTERNAL_JWT_PUBLIC_KEY,
  });
}
