import { MESSAGE_POLICIES, isBusEventName, type SignalSnapshot } from '@signal/contracts';
import { AmqpClient, Consumer, brokerNames } from '@signal/messaging';
import {
  Batcher,
  LoadShedder,
  PeriodicTask,
  connectMongo,
  connectRedis,
  completeReadModelCheck,
  serviceConnections,
  storeAndBrokerChecks,
  sourceEpoch,
  type BackgroundWorker,
  type Logger,
  type ServesWith,
  type RedisClient,
} from '@signal/service-kit';
import type { Connection } from 'mongoose';
import type { StatsConfig } from './config';
import { ensureStatsCollections } from './data/collections';
import { ProjectionRepository } from './data/projection.repository';
import { StatsAggregates } from './data/stats-aggregates';
import { StatsCache } from './data/stats-cache';
import type { StatsReadDeps } from './domain/get-stats.use-case';
import { projectSignals } from './domain/project-signals.use-case';

const PROJECTION_BATCH = 500;

export interface StatsDependencies {
  mongo: Connection;
  redis: RedisClient;
  amqp: AmqpClient;
  repository: ProjectionRepository;
  aggregates: StatsAggregates;
  cache: StatsCache;
  consumer: Consumer<(typeof MESSAGE_POLICIES)['stats.signal-events']['schema']>;
  reads: StatsReadDeps;
  /** Rebuilds the aggregates from the projection when Redis lost them (or never had them). */
  rebuildAggregates(progress?: (done: number) => void): Promise<boolean>;
  /** In start order; stopped in reverse. */
  workers: BackgroundWorker[];
  close(): Promise<void>;
}

export async function createDependencies(config: StatsConfig, logger: Logger): Promise<StatsDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.STATS_DB, logger);
  await ensureStatsCollections(mongo);
  const repository = new ProjectionRepository(mongo);
  const redis = await connectRedis(config.REDIS_URL, logger);
  const cache = new StatsCache(
    redis,
    config.REDIS_PREFIX,
    config.STATS_CACHE_TTL_MS,
    config.STATS_CACHE_MIN_FRESH_MS,
  );
  const aggregates = new StatsAggregates(
    redis,
    config.REDIS_PREFIX,
    await sourceEpoch(mongo, 'stats-aggregates'),
    logger,
  );
  const rebuildAggregates = (progress?: (done: number) => void) =>
    aggregates.model.rebuild(
      () => repository.streamAll(1000),
      async (batch) => {
        await aggregates.apply(batch);
      },
      progress,
    );
  const aggregatesCheck = new PeriodicTask(
    'stats-aggregates-check',
    config.STATS_CHECK_INTERVAL_MS,
    async () => {
      if (!(await aggregates.model.isReady())) await rebuildAggregates();
    },
    logger,
  );
  const names = brokerNames(config.AMQP_PREFIX);
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name: 'stats' });
  const policy = MESSAGE_POLICIES['stats.signal-events'];
  // Events are projected by the batch: one batch at a time (so no two writes of one signal
  // race), up to 500 events, while the next one fills (prefetch twice that). One event at a
  // time would cost a failed update and an insert on the store per new signal, far too slow
  // for a backfill of a million signals.
  const projection = new Batcher<SignalSnapshot, void>({
    run: async (snapshots) => {
      await projectSignals({ repository, aggregates, cache }, snapshots);
      return snapshots.map(() => undefined);
    },
    maxItems: PROJECTION_BATCH,
    windowMs: 5,
    maxConcurrent: 1,
  });
  const consumer = new Consumer({
    client: amqp,
    logger,
    queue: names.statsQueue,
    schema: policy.schema,
    policy,
    prefetch: 2 * PROJECTION_BATCH,
    queueType: config.AMQP_QUEUE_TYPE,
    bindings: { exchange: names.signalEvents, routingKeys: ['signal.*'] },
    handler: async (event) => {
      // A name from a newer producer may mean what this reader cannot know (a deletion, say):
      // skipped, not guessed at and not dead-lettered.
      if (!isBusEventName(event.name)) return;
      await projection.add([event.signal]);
    },
  });
  const workers: BackgroundWorker[] = [
    { name: 'aggregates-check', start: () => aggregatesCheck.start(), stop: () => aggregatesCheck.stop() },
    {
      name: 'event-consumer',
      start: async () => {
        await consumer.start();
        amqp.start();
      },
      stop: async () => {
        await consumer.stop();
        await projection.flush();
      },
    },
  ];
  return {
    mongo,
    redis,
    amqp,
    repository,
    aggregates,
    cache,
    consumer,
    reads: {
      aggregates,
      repository,
      cache,
      logger,
      aggregatesMissed: () => aggregatesCheck.runSoon(),
      storeReads: new LoadShedder(
        config.STORE_FALLBACK_CONCURRENCY,
        'Computing statistics from the database',
        config.STORE_FALLBACK_DEADLINE_MS,
      ),
    },
    rebuildAggregates,
    workers,
    async close() {
      for (const w of [...workers].reverse()) await w.stop();
      await amqp.close();
      redis.disconnect();
      await mongo.close();
    },
  };
}

/** This service's connections, closed after its workers stop (see service-kit `registerShutdown`). */
export const connections = (deps: StatsDependencies) => serviceConnections(deps);

/** What readiness looks at: the projection's store, the aggregates (Redis, complete), the broker. */
export const healthChecks = (deps: StatsDependencies) => ({
  ...storeAndBrokerChecks(deps.mongo, deps.amqp),
  aggregates: completeReadModelCheck(deps.aggregates.model),
});

/**
 * Figures come from the aggregates or, without them, from the MongoDB projection: either one is
 * enough to serve reads. Without the broker the figures only fall behind: "degraded", not unready.
 */
export const servesWith: ServesWith = (up) => up('mongo') || up('aggregates');
