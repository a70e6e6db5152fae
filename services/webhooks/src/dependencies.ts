import { MESSAGE_POLICIES, type WebhookDeliveryJob } from '@signal/contracts';
import { AmqpClient, brokerNames, declareConsumerQueues, type BrokerNames } from '@signal/messaging';
import { connectMongo, pingMongo, type Logger } from '@signal/service-kit';
import type { ConfirmChannel } from 'amqplib';
import type { Connection } from 'mongoose';
import type { WebhooksConfig } from './config';
import { deliveryModel, subscriptionModel } from './data/webhook.models';
import { WebhookRepository } from './data/webhook.repository';
import type { ScheduleJob } from './domain/delivery-jobs';

export interface WebhooksDependencies {
  mongo: Connection;
  amqp: AmqpClient;
  names: BrokerNames;
  repository: WebhookRepository;
  schedule: ScheduleJob;
  close(): Promise<void>;
}

const THROTTLE_LANE = 0;

/** Delivery queue + one TTL delay queue per retry lane, each dead-lettering back into it. */
async function declareDeliveryTopology(
  channel: ConfirmChannel,
  names: BrokerNames,
  lanes: number,
  queueType: 'quorum' | 'classic',
) {
  const policy = MESSAGE_POLICIES['webhooks.deliveries'];
  await declareConsumerQueues(channel, names.deliveriesQueue, policy.retryDelayMs, queueType);
  for (let lane = 0; lane <= lanes; lane++) {
    await channel.assertQueue(names.deliveryDelayQueue(lane), {
      durable: true,
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': names.deliveriesQueue },
    });
  }
}

export async function createDependencies(
  config: WebhooksConfig,
  logger: Logger,
  name: string,
): Promise<WebhooksDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.WEBHOOKS_DB);
  const repository = new WebhookRepository(subscriptionModel(mongo), deliveryModel(mongo));
  await repository.ensureIndexes();
  const names = brokerNames(config.AMQP_PREFIX);
  const lanes = config.WEBHOOK_RETRY_DELAYS_MS.length;
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name });
  await amqp.addSetup((ch) => declareDeliveryTopology(ch, names, lanes, config.AMQP_QUEUE_TYPE));
  amqp.start();

  // Retries wait in RabbitMQ (per-message TTL on a lane queue), never in a timer in memory,
  // so a worker crash or restart loses no scheduled attempt.
  const schedule: ScheduleJob = async (job: WebhookDeliveryJob, delayMs = 0) => {
    const body = Buffer.from(JSON.stringify(job));
    const messageId = `${job.delivery_id}:${job.attempt}`;
    if (delayMs <= 0) {
      await amqp.publish('', names.deliveriesQueue, body, { messageId });
      return;
    }
    const lane = delayMs <= 1000 ? THROTTLE_LANE : Math.min(job.attempt - 1, lanes) || 1;
    await amqp.publish('', names.deliveryDelayQueue(lane), body, {
      messageId,
      expiration: String(Math.round(delayMs)),
    });
  };

  return {
    mongo,
    amqp,
    names,
    repository,
    schedule,
    async close() {
      await amqp.close();
      await mongo.close();
    },
  };
}

export const healthChecks = (deps: WebhooksDependencies) => ({
  mongo: () => pingMongo(deps.mongo),
  rabbitmq: async () => {
    if (!deps.amqp.connected) throw new Error('down');
  },
});
