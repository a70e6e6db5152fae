import type { StatsConfig } from './config';
import { healthChecks, servesWith, type StatsDependencies } from './dependencies';
import {
  createBaseApp,
  finishApp,
  type HealthCheck,
  type Lifecycle,
  type Logger,
  type ServesWith,
} from '@signal/service-kit';
import type { Express } from 'express';
import type { StatsReadDeps } from './domain/get-stats.use-case';
import { statsRouter } from './http/stats.router';

export interface StatsAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  servesWith?: ServesWith;
  reads: StatsReadDeps;
  internalJwtSecret: string;
}

export function buildApp(deps: StatsAppDeps): Express {
  const app = createBaseApp({
    service: 'stats',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    servesWith: deps.servesWith,
  });
  app.use(statsRouter(deps.reads, deps.internalJwtSecret));
  return finishApp(app, deps.logger);
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
    reads: deps.reads,
    internalJwtSecret: config.INTERNAL_JWT_SECRET,
  });
}
