import { BUS_DELIVERY_LANES, MESSAGE_POLICIES, type WebhookDeliveryJob } from '@signal/contracts';
import {
  AmqpClient,
  brokerNames,
  declareConsumerQueues,
  declareDelayCascade,
  delayLevelNames,
  delayRoutingKey,
  delayUnits,
  entryLevel,
  spillingQueueArguments,
  type BrokerNames,
  type QueueType,
} from '@signal/messaging';
import {
  connectMongo,
  serviceConnections,
  storeIdCommands,
  storeAndBrokerChecks,
  type Logger,
  type ServesWith,
} from '@signal/service-kit';
import type { ConfirmChannel } from 'amqplib';
import type { Connection } from 'mongoose';
import type { WebhooksConfig } from './config';
import { IdempotencyRepository } from './data/idempotency.repository';
import { ensureIndexes, webhookCollections, type WebhookCollections } from './data/webhook.models';
import { WebhookRepository } from './data/webhook.repository';
import type { ScheduleJob } from './domain/delivery-jobs';

export interface WebhooksDependencies {
  mongo: Connection;
  collections: WebhookCollections;
  amqp: AmqpClient;
  names: BrokerNames;
  repository: WebhookRepository;
  idempotency: IdempotencyRepository;
  schedule: ScheduleJob;
}

/**
 * How a lane is declared: a job not taken within the bus contract's wait (60 s) moves to the
 * first-attempt queue, which every release reads, so a lane no worker reads any more (a rollback
 * to a release before lanes, fewer lanes configured) hands its jobs on. Fixed: a queue's
 * arguments cannot change once it is declared.
 */
export const laneArguments = (names: BrokerNames, queueType: QueueType) =>
  spillingQueueArguments(queueType, BUS_DELIVERY_LANES.spillMs, names.deliveriesQueue);

/**
 * First attempts go to a lane of their account (fan-out's choice, a test event's own lane) or
 * the first-attempt queue (older releases' first attempts, what a lane spilled); every wait
 * (retries, a subscription at its cap) goes through the delay cascade (fixed-TTL queues, see
 * messaging) into a queue of its own, so a due retry never waits behind a backlog of first
 * attempts. Every lane is declared before anything is published (by the API too): a job sent to
 * a queue that does not exist is dropped by the broker.
 */
async function declareDeliveryTopology(
  channel: ConfirmChannel,
  names: BrokerNames,
  queueType: QueueType,
  lanes: number,
) {
  const policy = MESSAGE_POLICIES['webhooks.deliveries'];
  await declareConsumerQueues(channel, names.deliveriesQueue, policy.retryDelayMs, queueType);
  await declareConsumerQueues(channel, names.deliveriesDueQueue, policy.retryDelayMs, queueType);
  await declareDelayCascade(channel, delayLevelNames(names, queueType), names.deliveriesDueQueue, queueType);
  for (let lane = 0; lane < lanes; lane++)
    await channel.assertQueue(names.deliveryLane(lane), {
      durable: true,
      arguments: laneArguments(names, queueType),
    });
}

export async function createDependencies(
  config: WebhooksConfig,
  logger: Logger,
  name: string,
): Promise<WebhooksDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.WEBHOOKS_DB, logger);
  const collections = webhookCollections(mongo);
  const storeIds = await storeIdCommands(mongo);
  await ensureIndexes(collections, {
    pagedByStore: storeIds?.pageByLatest !== undefined,
    logByIdPrefix: storeIds?.idsByPrefix !== undefined,
  });
  const names = brokerNames(config.AMQP_PREFIX);
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name });
  await amqp.addSetup((ch) =>
    declareDeliveryTopology(ch, names, config.AMQP_QUEUE_TYPE, config.WEBHOOK_LANES),
  );
  const delayLevel = delayLevelNames(names, config.AMQP_QUEUE_TYPE);
  amqp.start();

  // Retries wait in RabbitMQ, never in a timer in memory, so a worker crash or restart loses no
  // scheduled attempt. The job keeps its absolute due time and waits in the delay cascade,
  // which hands it to `webhooks.deliveries.due` when due (a job with no wait left goes straight
  // to `webhooks.deliveries`); one longer than a pass (68 min) comes back early and is sent
  // round again (see deliverAttempt).
  const schedule: ScheduleJob = async (job: WebhookDeliveryJob, delayMs?: number, lane?: number) => {
    const dueAt = delayMs !== undefined ? Date.now() + Math.max(0, delayMs) : (job.due_at ?? Date.now());
    const units = delayUnits(dueAt - Date.now());
    const body = Buffer.from(JSON.stringify({ ...job, due_at: dueAt }));
    const messageId = `${job.delivery_id}:${job.attempt}`;
    // Only first attempts go to a first-attempt queue: a later attempt due now (a retry, a
    // "retry now", a recovered delivery) goes to the due queue, so another account's recovered
    // or retried work never stands in line before anyone's first attempts. Fan-out's first
    // attempts and test events go to the lane chosen for their account.
    const nowQueue =
      job.attempt > 1
        ? names.deliveriesDueQueue
        : lane !== undefined
          ? names.deliveryLane(lane)
          : names.deliveriesQueue;
    if (units === 0) await amqp.publish('', nowQueue, body, { messageId });
    else
      await amqp.publish(delayLevel(entryLevel(units)), delayRoutingKey(units), body, {
        messageId,
      });
  };

  return {
    mongo,
    collections,
    amqp,
    names,
    repository: new WebhookRepository(collections, storeIds, {
      listReadMaxMs: config.WEBHOOK_LIST_READ_MAX_MS,
    }),
    idempotency: new IdempotencyRepository(collections.idempotency),
    schedule,
  };
}

/** This service's connections, closed after its workers stop (see service-kit `registerShutdown`). */
export const connections = (deps: WebhooksDependencies) => serviceConnections(deps);

/** What readiness looks at (the API's and the worker's): the store and the broker. */
export const healthChecks = (deps: WebhooksDependencies) => storeAndBrokerChecks(deps.mongo, deps.amqp);

/**
 * The API manages subscriptions and deliveries in MongoDB; without the broker only sending a
 * test or a re-send waits (503): "degraded". The worker needs both (it takes jobs from the broker
 * and records attempts in the store), so it keeps the default.
 */
export const apiServesWith: ServesWith = (up) => up('mongo');
