import { createBaseApp, finishApp, type HealthCheck, type Lifecycle, type Logger } from '@signal/service-kit';
import type { Express } from 'express';
import type { SubscriptionDeps } from './domain/subscriptions.use-cases';
import { webhooksRouter } from './http/webhooks.router';

export interface WebhooksAppDeps {
  logger: Logger;
  lifecycle: Lifecycle;
  checks: Record<string, HealthCheck>;
  subscriptions: SubscriptionDeps;
  internalJwtSecret: string;
}

export function buildApp(deps: WebhooksAppDeps): Express {
  const app = createBaseApp({
    service: 'webhooks',
    logger: deps.logger,
    lifecycle: deps.lifecycle,
    checks: deps.checks,
    jsonLimit: '64kb',
  });
  app.use(webhooksRouter(deps.subscriptions, deps.internalJwtSecret));
  return finishApp(app, deps.logger);
}
