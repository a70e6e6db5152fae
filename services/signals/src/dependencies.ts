import type { SignalEvent } from '@signal/contracts';
import { AmqpClient, OutboxRelay, brokerNames, declareEventExchange } from '@signal/messaging';
import { connectMongo, currentRequestId, pingMongo, type Logger } from '@signal/service-kit';
import type { Connection } from 'mongoose';
import type { SignalsConfig } from './config';
import { signalModel } from './data/signal.model';
import { SignalRepository } from './data/signal.repository';

export interface SignalsDependencies {
  mongo: Connection;
  amqp: AmqpClient;
  repository: SignalRepository;
  relay: OutboxRelay<SignalEvent>;
  exchange: string;
}

export async function createDependencies(
  config: SignalsConfig,
  logger: Logger,
): Promise<SignalsDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.SIGNALS_DB);
  const repository = new SignalRepository(signalModel(mongo));
  await repository.ensureIndexes();

  const exchange = brokerNames(config.AMQP_PREFIX).signalEvents;
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name: 'signals' });
  await amqp.addSetup((channel) => declareEventExchange(channel, exchange));
  amqp.start();

  const relay = new OutboxRelay<SignalEvent>({
    store: {
      findPending: (limit) => repository.findPendingOutbox(limit),
      findPendingByIds: (ids) => repository.findPendingByIds(ids),
      markPublished: (id, eventIds) => repository.removeFromOutbox(id, eventIds),
    },
    publish: (event) =>
      amqp.publish(exchange, event.name, Buffer.from(JSON.stringify(event)), {
        messageId: event.id,
        timestamp: Math.floor(Date.parse(event.occurred_at) / 1000),
        type: event.name,
        headers: currentRequestId() ? { 'x-request-id': currentRequestId() } : {},
      }),
    eventId: (event) => event.id,
    logger,
    intervalMs: config.OUTBOX_INTERVAL_MS,
    sweepIntervalMs: config.OUTBOX_SWEEP_INTERVAL_MS,
  });
  return { mongo, amqp, repository, relay, exchange };
}

export const healthChecks = (deps: SignalsDependencies) => ({
  mongo: () => pingMongo(deps.mongo),
  rabbitmq: async () => {
    if (!deps.amqp.connected) throw new Error('down');
  },
});
