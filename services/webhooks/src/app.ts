import { lanesOf } from '@signal/messaging';
import { guardPolicy, type WebhooksConfig } from './config';
import { ReadDebtRepository } from './data/read-debt.repository';
import { AccountReadSlots } from './domain/concurrency';
import { apiServesWith, healthChecks, type WebhooksDependencies } from './dependencies';
import {
  readinessTiming,
  serviceApp,
  type Lifecycle,
  type Logger,
  type ServiceAppParts,
} from '@signal/service-kit';
import type { KeyObject } from 'node:crypto';
import type { Express } from 'express';
import type { SubscriptionDeps } from './domain/subscription-rules';
import { webhooksRouter } from './http/webhooks.router';

export interface WebhooksAppDeps extends ServiceAppParts {
  subscriptions: SubscriptionDeps;
  /** Checks the gateway's tokens (cannot make any). */
  internalJwtKey: KeyObject;
}

export function buildApp(deps: WebhooksAppDeps): Express {
  return serviceApp(
    { service: 'webhooks', ...deps, jsonLimitBytes: 64 * 1024 },
    webhooksRouter(deps.subscriptions, deps.internalJwtKey),
  );
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
    readiness: readinessTiming(config),
    internalJwtKey: config.INTERNAL_JWT_PUBLIC_KEY,
    subscriptions: {
      repository: deps.repository,
      idempotency: deps.idempotency,
      schedule: deps.schedule,
      testLaneOf: (accountId) => lanesOf(accountId, config.WEBHOOK_LANES)[0],
      guard: guardPolicy(config),
      secretOverlapMs: config.WEBHOOK_SECRET_OVERLAP_MS,
      maxPerAccount: config.WEBHOOKS_MAX_PER_ACCOUNT,
      recoverPerMinute: config.WEBHOOK_RECOVER_PER_MINUTE,
      listReads: new AccountReadSlots(
        config.WEBHOOK_LIST_READS_PER_ACCOUNT,
        config.WEBHOOK_LIST_READ_MS_PER_SECOND,
        config.WEBHOOK_LIST_READ_BURST_MS,
        new ReadDebtRepository(deps.collections.listReadDebts),
      ),
    },
  });
}
