import { MESSAGE_POLICIES, WEBHOOK_EVENTS } from '@signal/contracts';
import { Consumer } from '@signal/messaging';
import { createBaseApp, finishApp, type Lifecycle, type Logger } from '@signal/service-kit';
import type { Express } from 'express';
import { Agent } from 'undici';
import { guardPolicy, type WebhooksConfig } from './config';
import { healthChecks, type WebhooksDependencies } from './dependencies';
import { SubscriptionConcurrency, deliverAttempt } from './domain/deliver.use-case';
import { fanOut } from './domain/fan-out.use-case';
import { SubscriptionCache } from './domain/subscription-cache';
import { guardedLookupFor, type GuardPolicy } from './domain/url-guard';

export interface Worker {
  start(): Promise<void>;
  /** Stops taking messages and waits for the ones in hand. */
  stop(): Promise<void>;
  health: Express;
}

/** Delivery worker: fan-out of bus events, then signed POSTs with retries through RabbitMQ. */
export function buildWorker(
  config: WebhooksConfig,
  deps: WebhooksDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
  /** Tests that run the production wall against a local receiver pass its exact address here. */
  guard: GuardPolicy = guardPolicy(config),
): Worker {
  const dispatcher = new Agent({
    connect: {
      timeout: config.WEBHOOK_TIMEOUT_MS,
      lookup: guardedLookupFor(guard),
    },
    keepAliveTimeout: 10_000,
    connections: 64,
  });
  const subscriptions = new SubscriptionCache(deps.repository, config.WEBHOOK_SUBSCRIPTION_CACHE_MS);
  const fanOutConsumer = new Consumer({
    client: deps.amqp,
    logger,
    queue: deps.names.webhooksQueue,
    schema: MESSAGE_POLICIES['webhooks.signal-events'].schema,
    policy: MESSAGE_POLICIES['webhooks.signal-events'],
    prefetch: 20,
    queueType: config.AMQP_QUEUE_TYPE,
    bindings: { exchange: deps.names.signalEvents, routingKeys: [...WEBHOOK_EVENTS] },
    handler: async (event) => {
      await fanOut(deps.repository, deps.schedule, event, (name) => subscriptions.subscriptionsFor(name));
    },
  });
  const concurrency = new SubscriptionConcurrency(config.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION);
  const deliveryConsumer = new Consumer({
    client: deps.amqp,
    logger,
    queue: deps.names.deliveriesQueue,
    schema: MESSAGE_POLICIES['webhooks.deliveries'].schema,
    policy: MESSAGE_POLICIES['webhooks.deliveries'],
    prefetch: config.WEBHOOK_WORKER_PREFETCH,
    queueType: config.AMQP_QUEUE_TYPE,
    handler: (job) =>
      deliverAttempt(
        {
          repository: deps.repository,
          subscriptions,
          dispatcher,
          schedule: deps.schedule,
          logger,
          concurrency,
          retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
          maxRetryAfterMs: config.WEBHOOK_MAX_RETRY_AFTER_MS,
          guard,
        },
        job,
      ),
  });
  const health = finishApp(
    createBaseApp({ service: 'webhooks-worker', logger, lifecycle, checks: healthChecks(deps) }),
    logger,
  );
  let stopping: Promise<void> | undefined;
  return {
    health,
    async start() {
      await deliveryConsumer.start();
      await fanOutConsumer.start();
    },
    stop() {
      // Idempotent: the lifecycle and a test may both stop it.
      stopping ??= (async () => {
        await Promise.all([fanOutConsumer.stop(), deliveryConsumer.stop()]);
        await dispatcher.close();
      })();
      return stopping;
    },
  };
}
