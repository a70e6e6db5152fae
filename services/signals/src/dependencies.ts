import type { SignalEvent } from '@signal/contracts';
import { AmqpClient, OutboxRelay, brokerNames, declareEventExchange } from '@signal/messaging';
import {
  connectMongo,
  connectRedis,
  inContextOf,
  LoadShedder,
  completeReadModelCheck,
  serviceConnections,
  storeAndBrokerChecks,
  sourceEpoch,
  type BackgroundWorker,
  type Logger,
  type ServesWith,
} from '@signal/service-kit';
import type Redis from 'ioredis';
import type { Connection } from 'mongoose';
import type { SignalsConfig } from './config';
import { ensureSignalCollections } from './data/collections';
import { SignalRepository } from './data/signal.repository';
import { TimelineIndex } from './data/timeline-index';
import { TimelineRepairs } from './data/timeline-repairs';
import type { ListDeps } from './domain/list-signals.use-case';
import type { WriteEffects } from './domain/ports';
import { TimelineKeeper } from './domain/timeline-keeper';

export interface SignalsDependencies {
  mongo: Connection;
  redis: Redis;
  amqp: AmqpClient;
  repository: SignalRepository;
  index: TimelineIndex;
  keeper: TimelineKeeper;
  relay: OutboxRelay<SignalEvent>;
  exchange: string;
  reads: ListDeps;
  effects: WriteEffects;
  /** In start order; stopped in reverse. */
  workers: BackgroundWorker[];
}

export async function createDependencies(
  config: SignalsConfig,
  logger: Logger,
): Promise<SignalsDependencies> {
  const mongo = await connectMongo(config.MONGO_URL, config.SIGNALS_DB, logger);
  await ensureSignalCollections(mongo);
  const repository = new SignalRepository(mongo);
  const redis = await connectRedis(config.REDIS_URL, logger);
  const index = new TimelineIndex(redis, config.REDIS_PREFIX, await sourceEpoch(mongo, 'timeline'), logger);
  const keeper = new TimelineKeeper({
    index,
    repository,
    repairs: new TimelineRepairs(mongo),
    logger,
    intervalMs: config.TIMELINE_CHECK_INTERVAL_MS,
  });

  const exchange = brokerNames(config.AMQP_PREFIX).signalEvents;
  const amqp = new AmqpClient({ url: config.AMQP_URL, logger, name: 'signals' });
  await amqp.addSetup((channel) => declareEventExchange(channel, exchange));
  amqp.start();

  const publishEvent = async (event: SignalEvent): Promise<void> => {
    const requestId = event.context?.request_id;
    await amqp.publish(exchange, event.name, Buffer.from(JSON.stringify(event)), {
      messageId: event.id,
      timestamp: Math.floor(Date.parse(event.occurred_at) / 1000),
      type: event.name,
      headers: requestId ? { 'x-request-id': requestId } : {},
    });
  };
  const relay = new OutboxRelay<SignalEvent>({
    store: {
      findPending: (limit) => repository.findPendingOutbox(limit),
      findPendingByIds: (ids) => repository.findPendingByIds(ids),
      markPublished: (id, eventIds, all) => repository.removeFromOutbox(id, eventIds, all),
    },
    // Each event is published in the trace of the write that made it (stored with the entry).
    publish: (event) => inContextOf(event.context, () => publishEvent(event)),
    // Before events leave the outbox: repairs an index update lost to a crash between the
    // store write and the index update (one index call per document, a whole bulk batch at once).
    confirmed: (events) => keeper.record(events.map((e) => e.signal)),
    eventId: (event) => event.id,
    occurredAt: (event) => Date.parse(event.occurred_at),
    logger,
    intervalMs: config.OUTBOX_INTERVAL_MS,
    sweepIntervalMs: config.OUTBOX_SWEEP_INTERVAL_MS,
  });
  return {
    mongo,
    redis,
    amqp,
    repository,
    index,
    keeper,
    relay,
    exchange,
    reads: {
      index,
      repository,
      logger,
      indexMissed: () => keeper.kick(),
      storeReads: new LoadShedder(config.STORE_FALLBACK_CONCURRENCY, 'Listing from the database'),
    },
    effects: {
      async written(snapshots, outbox) {
        await keeper.record(snapshots);
        if (outbox) relay.offer([outbox]);
        else relay.kick(snapshots.map((s) => s.id));
      },
    },
    workers: [
      { name: 'timeline-keeper', start: () => keeper.start(), stop: () => keeper.stop() },
      { name: 'outbox-relay', start: () => relay.start(), stop: () => relay.stop() },
    ],
  };
}

/** This service's connections, closed after its workers stop (see service-kit `registerShutdown`). */
export const connections = (deps: SignalsDependencies) => serviceConnections(deps);

/** What readiness looks at: the store, the timeline index (Redis, complete) and the broker. */
export const healthChecks = (deps: SignalsDependencies) => ({
  ...storeAndBrokerChecks(deps.mongo, deps.amqp),
  timeline: completeReadModelCheck(deps.index.model),
});

/**
 * Lists and details come from the timeline index or, without it, from MongoDB: either one is
 * enough to serve reads. Without MongoDB ingest answers 503; without the broker events wait in
 * the outbox. Anything down short of both read paths is "degraded", not unready.
 */
export const servesWith: ServesWith = (up) => up('mongo') || up('timeline');
