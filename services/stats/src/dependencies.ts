import { MESSAGE_POLICIES } from '@signal/contracts';
import { AmqpClient, Consumer, brokerNames } from '@signal/messaging';
import { connectMongo, connectRedis, pingMongo, type Logger } from '@signal/service-kit';
import type Redis from 'ioredis';
import type { Connection } from 'mongoose';
import type { StatsConfig } from './config';
import { projectionModel } from './data/projection.model';
import { ProjectionRepository } from './data/projection.repository';
import { projectSignal } from './domain/project-event.use-case';
import { StatsCache } from './domain/stats-cache';

export interface StatsDependencies {
  mongo: Connection;
  redis: Redis;
  amqp: AmqpClient;
  repository: ProjectionRepository;
  cache: StatsCache;
  consumer: Consumer<(typeof MESSAGE_POLICIES)['stats.signal-events']['schema']>;
  close(): Promise<void>;
}

export async function createDependencies(config: StatsConfig, logger: Logger): Promise<StatsDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.STATS_DB);
  const repository = new ProjectionRepository(projectionModel(mongo));
  await repository.ensureIndexes();
  const redis = await connectRedis(config.REDIS_URL, logger);
  const cache = new StatsCache(
    redis,
    config.REDIS_PREFIX,
    config.STATS_CACHE_TTL_MS,
    config.STATS_CACHE_MIN_FRESH_MS,
  );
  const names = brokerNames(config.AMQP_PREFIX);
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name: 'stats' });
  const policy = MESSAGE_POLICIES['stats.signal-events'];
  const consumer = new Consumer({
    client: amqp,
    logger,
    queue: names.statsQueue,
    schema: policy.schema,
    policy,
    prefetch: 50,
    queueType: config.AMQP_QUEUE_TYPE,
    bindings: { exchange: names.signalEvents, routingKeys: ['signal.*'] },
    handler: async (event) => {
      await projectSignal(repository, cache, event.signal);
    },
  });
  return {
    mongo,
    redis,
    amqp,
    repository,
    cache,
    consumer,
    async close() {
      await consumer.stop();
      await amqp.close();
      redis.disconnect();
      await mongo.close();
    },
  };
}

export const healthChecks = (deps: StatsDependencies) => ({
  mongo: () => pingMongo(deps.mongo),
  redis: () => deps.redis.ping(),
  rabbitmq: async () => {
    if (!deps.amqp.connected) throw new Error('down');
  },
});
