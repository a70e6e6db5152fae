import { MESSAGE_POLICIES, WEBHOOK_EVENTS } from '@signal/contracts';
import { Consumer, delayLevelNames, lanesOf, reportDelayCascadeDepth } from '@signal/messaging';
import {
  readinessTiming,
  serviceApp,
  type BackgroundWorker,
  type Lifecycle,
  metrics,
  type Logger,
} from '@signal/service-kit';
import type { Express } from 'express';
import { guardPolicy, type WebhooksConfig } from './config';
import { InsertBatcher } from './data/insert-batcher';
import { HealthWriter } from './data/health-writer';
import type { AttemptClaims, OpenDeliveries } from './domain/ports';
import type { AttemptClaim, DeliveryDocument, DeliveryLogEntry, OpenDelivery } from './domain/records';
import { healthChecks, laneArguments, type WebhooksDependencies } from './dependencies';
import { DeliverySlots } from './domain/concurrency';
import { deliverAttempt } from './domain/deliver.use-case';
import { fanOut } from './domain/fan-out.use-case';
import { DeliveryRetention } from './domain/retention';
import { chooseLane } from './domain/lanes';
import { SubscriptionCache } from './domain/subscription-cache';
import { guardedLookupFor, type GuardPolicy, type Lookup } from './domain/url-guard';
import { closeReceiverAgents, nodeReceiverClient, receiverAgents } from './data/receiver-client';
import { receiverResolver } from './data/receiver-resolver';

export interface Worker {
  /** In start order (service-kit `startWorkers`); stopped in reverse (`registerShutdown`). */
  workers: BackgroundWorker[];
  health: Express;
}

/**
 * What only a test may change, in code (no setting reaches it): the URL guard's policy with exact
 * addresses let through, the resolver its connect-time check runs on, and a CA to trust, so
 * that a test can deliver over https to a local receiver with the production guard on.
 */
export interface WorkerTestHooks {
  guard?: GuardPolicy;
  resolve?: Lookup;
  ca?: string;
}

/** Stops once, however many times it is asked (a test may stop a worker before the shutdown does). */
function stopOnce(stop: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => (stopping ??= stop());
}

/**
 * Delivery worker: fan-out of bus events, then signed POSTs with retries through RabbitMQ.
 * Its background parts, in start order: the batched writers, the HTTP client, the consumers of
 * due attempts, of the shared first-attempt queue and of the lanes, then the fan-out consumer.
 * Stopping runs the other way: no new events, attempts in hand finish, their records are
 * written, connections close.
 */
export function buildWorker(
  config: WebhooksConfig,
  deps: WebhooksDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
  testHooks: WorkerTestHooks = {},
): Worker {
  const guard = testHooks.guard ?? guardPolicy(config);
  // Every metric the worker may count, declared now: one not counted yet reads 0 (its HELP and
  // TYPE listed), never "no data" on a dashboard until its first event.
  for (const declare of [
    metrics.webhookAttempts,
    metrics.webhookAttemptDuration,
    metrics.webhookDeferrals,
    metrics.webhookEventToDelivery,
    metrics.webhookJobsWaitingOverShare,
    metrics.webhookJobsWaitingForSubscription,
    metrics.webhookDeliveriesRemoved,
    metrics.storeWritesRefused,
    metrics.storeWritesAlreadyHeld,
  ])
    declare();
  const resolve =
    testHooks.resolve ??
    receiverResolver({
      servers: config.WEBHOOK_DNS_SERVERS,
      timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS,
    }).lookup;
  const agents = receiverAgents({
    lookup: guardedLookupFor(guard, resolve),
    idleMs: 10_000,
    ...(testHooks.ca ? { ca: testHooks.ca } : {}),
  });
  // A second write to a collection starts only with a hundred records: fewer wait for the write
  // in flight and go in the next one, so under load a batch grows with the load rather than the
  // number of writes. On FerretDB a write's own cost (its command, its transaction) is that of
  // tens of records: with any batch whose window was over sent at once, 2,000 attempts a second
  // went as writes of a few records each (docs/benchmarks.md, webhooks).
  const batching = {
    maxItems: config.WEBHOOK_WRITE_BATCH,
    windowMs: config.WEBHOOK_WRITE_WINDOW_MS,
    maxConcurrentWrites: 4,
    minBatchWhileWriting: 100,
  };
  const held = (collection: string) => (count: number) =>
    metrics.storeWritesAlreadyHeld().inc({ collection }, count);
  const deliveryWriter = new InsertBatcher<DeliveryDocument>({
    write: (docs) => deps.repository.insertDeliveries(docs),
    id: (d) => d._id,
    held: held('deliveries'),
    ...batching,
  });
  const refused = (collection: string) => (doc: { _id: string }, err: unknown) => {
    metrics.storeWritesRefused().inc({ collection });
    logger.error(
      { collection, id: doc._id, err: err instanceof Error ? err.message : String(err) },
      'document refused by the store; written alone, the rest of its batch landed',
    );
  };
  const logWriter = new InsertBatcher<DeliveryLogEntry>({
    write: (entries) => deps.repository.appendLog(entries),
    id: (e) => e._id,
    refused: refused('delivery_log'),
    held: held('delivery_log'),
    ...batching,
  });
  const claimWriter = new InsertBatcher<AttemptClaim>({
    write: (claims) => deps.repository.insertClaims(claims),
    id: (c) => c._id,
    refused: refused('attempt_claims'),
    held: held('attempt_claims'),
    ...batching,
  });
  const openWriter = new InsertBatcher<OpenDelivery>({
    write: (entries) => deps.repository.insertOpen(entries),
    id: (e) => e._id,
    refused: refused('open_deliveries'),
    held: held('open_deliveries'),
    ...batching,
  });
  const open: OpenDeliveries = {
    mark: async (entry) => {
      await openWriter.insert([entry]);
    },
    close: (deliveryId) => deps.repository.closeOpen(deliveryId),
  };
  const claims: AttemptClaims = {
    async claim(attemptId, jobId) {
      const held = await claimWriter.insert([{ _id: attemptId, job_id: jobId, at: new Date() }]);
      if (held.size === 0) return { outcome: 'ours' };
      const first = await deps.repository.claimOf(attemptId);
      return first?.job_id === jobId ? { outcome: 'again', claimedAt: first.at } : { outcome: 'taken' };
    },
  };
  const healthWriter = new HealthWriter(
    (webhookId, batch) => deps.repository.writeHealth(webhookId, batch),
    config.WEBHOOK_HEALTH_FLUSH_MS,
    config.WEBHOOK_HEALTH_REFRESH_MS,
    logger,
  );
  const subscriptions = new SubscriptionCache(deps.repository, config.WEBHOOK_SUBSCRIPTION_CACHE_MS);
  const fanOutConsumer = new Consumer({
    client: deps.amqp,
    logger,
    queue: deps.names.webhooksQueue,
    schema: MESSAGE_POLICIES['webhooks.signal-events'].schema,
    policy: MESSAGE_POLICIES['webhooks.signal-events'],
    prefetch: config.WEBHOOK_FANOUT_PREFETCH,
    queueType: config.AMQP_QUEUE_TYPE,
    bindings: { exchange: deps.names.signalEvents, routingKeys: [...WEBHOOK_EVENTS] },
    handler: async (event, meta) => {
      await fanOut(
        {
          deliveries: deliveryWriter,
          open,
          schedule: deps.schedule,
          laneFor: (accountId) =>
            chooseLane(
              lanesOf(accountId, config.WEBHOOK_LANES),
              (lane) => laneConsumers[lane]?.inFlightCount ?? 0,
              config.WEBHOOK_LANE_PREFETCH,
            ),
          subscriptionsFor: (name) => subscriptions.subscriptionsFor(name),
          unattempted: (ids) => deps.repository.unattempted(ids),
        },
        event,
        meta.redelivered || meta.attempt > 1,
      );
    },
  });
  // A lane's job waits for its subscription up to a dozen receiver timeouts (a minute by
  // default), so that most jobs of a receiver that hangs are served in turn from the worker
  // rather than going round the broker.
  const parkMaxMs = 12 * config.WEBHOOK_TIMEOUT_MS;
  const slots = new DeliverySlots({
    capacity: config.WEBHOOK_WORKER_PREFETCH,
    perAccount: config.WEBHOOK_CONCURRENCY_PER_ACCOUNT,
    perSubscription: config.WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION,
    // A job in its account's line waits for one POST in flight to finish: a receiver timeout.
    maxWaitMs: config.WEBHOOK_TIMEOUT_MS,
    putBacksPerSecond: config.WEBHOOK_PUT_BACKS_PER_SECOND,
    laneCapacity: config.WEBHOOK_LANE_PREFETCH,
    parkMaxMs,
  });
  const deliverDeps = {
    log: logWriter,
    claims,
    findLogEntry: (id: string) => deps.repository.findLogEntry(id),
    open,
    health: healthWriter,
    findDelivery: (id: string) => deps.repository.findDelivery(id),
    disableSubscription: (id: string, reason: string) => deps.repository.disableSubscription(id, reason),
    subscriptions,
    receivers: nodeReceiverClient(agents),
    schedule: deps.schedule,
    logger,
    slots,
    retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
    maxRetryAfterMs: config.WEBHOOK_MAX_RETRY_AFTER_MS,
    guard,
  };
  const laneDeps = { ...deliverDeps, slots: slots.forLanes() };
  // An attempt may wait up to a receiver timeout over its account's share, as long again in its
  // account's line, take the whole receiver timeout and then its record's write: the handler's
  // own limit must be longer, or a long configured timeout would retry attempts still running.
  const deliveryPolicy = {
    ...MESSAGE_POLICIES['webhooks.deliveries'],
    handlerTimeoutMs: Math.max(
      MESSAGE_POLICIES['webhooks.deliveries'].handlerTimeoutMs,
      3 * config.WEBHOOK_TIMEOUT_MS + 10_000,
    ),
  };
  // First attempts (each lane, and the shared queue), and attempts whose wait is over: each
  // queue has its own consumer, and all run deliverAttempt.
  // A lane's job may first wait for its subscription.
  const lanePolicy = { ...deliveryPolicy, handlerTimeoutMs: deliveryPolicy.handlerTimeoutMs + parkMaxMs };
  const attemptConsumer = (queue: string, prefetch: number, lane?: true) =>
    new Consumer({
      client: deps.amqp,
      logger,
      queue,
      schema: deliveryPolicy.schema,
      policy: lane ? lanePolicy : deliveryPolicy,
      prefetch,
      queueType: config.AMQP_QUEUE_TYPE,
      ...(lane
        ? {
            sharesSideQueuesOf: {
              queue: deps.names.deliveriesQueue,
              arguments: laneArguments(deps.names, config.AMQP_QUEUE_TYPE),
            },
          }
        : {}),
      handler: (job) => deliverAttempt(lane ? laneDeps : deliverDeps, job),
    });
  const deliveryConsumer = attemptConsumer(deps.names.deliveriesQueue, config.WEBHOOK_WORKER_PREFETCH);
  const dueConsumer = attemptConsumer(deps.names.deliveriesDueQueue, config.WEBHOOK_WORKER_PREFETCH);
  const laneConsumers = Array.from({ length: config.WEBHOOK_LANES }, (_, lane) =>
    attemptConsumer(deps.names.deliveryLane(lane), config.WEBHOOK_LANE_PREFETCH, true),
  );
  const retention = new DeliveryRetention({
    store: deps.repository,
    retentionMs: config.WEBHOOK_RETENTION_MS,
    intervalMs: config.WEBHOOK_RETENTION_SWEEP_MS,
    logger,
  });
  let stopDelayDepth: (() => void) | undefined;
  const health = serviceApp({
    service: 'webhooks-worker',
    logger,
    lifecycle,
    checks: healthChecks(deps),
    readiness: readinessTiming(config),
  });
  return {
    health,
    workers: [
      { name: 'delivery-writer', start: () => undefined, stop: stopOnce(() => deliveryWriter.flush()) },
      { name: 'delivery-log-writer', start: () => undefined, stop: stopOnce(() => logWriter.flush()) },
      { name: 'attempt-claim-writer', start: () => undefined, stop: stopOnce(() => claimWriter.flush()) },
      { name: 'open-delivery-writer', start: () => undefined, stop: stopOnce(() => openWriter.flush()) },
      { name: 'health-writer', start: () => undefined, stop: stopOnce(() => healthWriter.flush()) },
      {
        name: 'http-client',
        start: () => undefined,
        stop: stopOnce(async () => closeReceiverAgents(agents)),
      },
      {
        name: 'delay-cascade-depth',
        start: () => {
          stopDelayDepth = reportDelayCascadeDepth(
            deps.amqp,
            delayLevelNames(deps.names, config.AMQP_QUEUE_TYPE),
          );
        },
        stop: async () => {
          stopDelayDepth?.();
        },
      },
      {
        name: 'due-attempt-consumer',
        start: () => dueConsumer.start(),
        stop: stopOnce(() => dueConsumer.stop()),
      },
      {
        name: 'delivery-consumer',
        start: () => deliveryConsumer.start(),
        stop: stopOnce(() => deliveryConsumer.stop()),
      },
      {
        name: 'lane-consumers',
        start: async () => {
          for (const consumer of laneConsumers) await consumer.start();
        },
        stop: stopOnce(async () => {
          await Promise.all(laneConsumers.map((consumer) => consumer.stop()));
        }),
      },
      { name: 'delivery-retention', start: () => retention.start(), stop: stopOnce(() => retention.stop()) },
      {
        name: 'fan-out-consumer',
        start: () => fanOutConsumer.start(),
        stop: stopOnce(() => fanOutConsumer.stop()),
      },
    ],
  };
}
