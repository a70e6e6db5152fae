import { guardPolicy, type WebhooksConfig } from './config';
import { apiServesWith, healthChecks, type WebhooksDependencies } from './dependencies';
import {
  createBaseApp,
  finishApp,
  type HealthCheck,
  type Lifecycle,
  type Logger,
  type ServesWith,
} from '@signal/service-kit';
import type { KeyObject } from 'node:crypto';
import type { Express } from 'express';
import type { SubscriptionDeps } from './domain/subscriptions.use-cases';
import { webhooksRouter } from './http/webhooks.router';

export interface WebhooksAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  servesWith?: ServesWith;
  subscriptions: SubscriptionDeps;
  /** Checks the gateway's tokens (cannot make any). */
  internalJwtKey: KeyObject;
}

export function buildApp(deps: WebhooksAppDeps): Express {
  const app = createBaseApp({
    service: 'webhooks',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    servesWith: deps.servesWith,
    jsonLimit: '64kb',
  });
  app.use(webhooksRouter(deps.subscriptions, deps.internalJwtKey));
  return finishApp(app, deps.logger);
}

/** The app as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: WebhooksConfig,
  deps: WebhooksDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
): Express {
  return buildApp({
    logger,
    lifecycle,
    checks: healthChecks(deps),
    servesWith: apiServesWith,
    internalJwtKey: config.INTERNAL_JWT_PUBLIC_KEY,
    subscriptions: {
      repository: deps.repository,
      idempotency: deps.idempotency,
      schedule: deps.schedule,
      guard: guardPolicy(config),
      secretOverlapMs: config.WEBHOOK_SECRET_OVERLAP_MS,
    },
  });
}
