import type { StatsConfig } from './config';
import { healthChecks, type StatsDependencies } from './dependencies';
import { createBaseApp, finishApp, type HealthCheck, type Lifecycle, type Logger } from '@signal/service-kit';
import type { Express } from 'express';
import type { ProjectionRepository } from './data/projection.repository';
import type { StatsCache } from './domain/stats-cache';
import { statsRouter } from './http/stats.router';

export interface StatsAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  repository: ProjectionRepository;
  cache: StatsCache;
  internalJwtSecret: string;
}

export function buildApp(deps: StatsAppDeps): Express {
  const app = createBaseApp({
    service: 'stats',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
  });
  app.use(statsRouter(deps.repository, deps.cache, deps.internalJwtSecret));
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
    repository: deps.repository,
    cache: deps.cache,
    internalJwtSecret: config.INTERNAL_JWT_SECRET,
  });
}
