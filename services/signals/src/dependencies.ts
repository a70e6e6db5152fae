import { MESSAGE_POLICIES, WEBHOOK_EVENTS, type SignalEvent } from '@signal/contracts';
import { AmqpClient, Consumer, OutboxRelay, brokerNames, declareEventExchange } from '@signal/messaging';
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
  type RedisClient,
} from '@signal/service-kit';
import type { Connection } from 'mongoose';
import type { SignalsConfig } from './config';
import { ensureSignalCollections } from './data/collections';
import { EventLog } from './data/event-log';
import { EventLogTail } from './data/event-log-tail';
import { SignalRepository } from './data/signal.repository';
import { TimelineIndex } from './data/timeline-index';
import { TimelineRepairs } from './data/timeline-repairs';
import type { ListDeps } from './domain/list-signals.use-case';
import type { WriteEffects } from './domain/ports';
import { TimelineIndexMaintenance } from './domain/timeline-index-maintenance';
import type { StreamDeps } from './domain/open-stream.use-case';
import { StreamFeeder } from './domain/stream-feeder';
import { StreamHub } from './domain/stream-hub';

/** How many bus messages the live-stream feeder holds unacknowledged (its appends go by the batch). */
const STREAM_FEED_PREFETCH = 256;

export interface SignalsDependencies {
  mongo: Connection;
  redis: RedisClient;
  amqp: AmqpClient;
  repository: SignalRepository;
  index: TimelineIndex;
  indexMaintenance: TimelineIndexMaintenance;
  relay: OutboxRelay<SignalEvent>;
  exchange: string;
  reads: ListDeps;
  effects: WriteEffects;
  /** The live stream: the event log, this process's open streams and its tail of the log. */
  streams: StreamDeps;
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
  const indexMaintenance = new TimelineIndexMaintenance({
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
    confirmed: (events) => indexMaintenance.record(events.map((e) => e.signal)),
    eventId: (event) => event.id,
    occurredAt: (event) => Date.parse(event.occurred_at),
    logger,
    intervalMs: config.OUTBOX_INTERVAL_MS,
    sweepIntervalMs: config.OUTBOX_SWEEP_INTERVAL_MS,
  });

  // The live stream: a feeder (bus → event log, competing with the other replicas on one queue)
  // and one tail of the log per process, handing each entry to this process's open streams.
  const retentionMs = config.STREAM_RETENTION_HOURS * 3_600_000;
  const eventLog = new EventLog(redis, config.REDIS_PREFIX, retentionMs);
  const hub = new StreamHub({
    maxBufferedBytes: config.STREAM_MAX_BUFFERED_BYTES,
    heartbeatMs: config.STREAM_HEARTBEAT_MS,
    logger,
  });
  const tail = new EventLogTail({
    log: eventLog,
    redisUrl: config.REDIS_URL,
    deliver: (entries) => hub.deliver(entries),
    startAt: (position) => hub.startAt(position),
    logger,
  });
  const feeder = new StreamFeeder((entries) => eventLog.append(entries));
  const streamPolicy = MESSAGE_POLICIES['signals.stream-events'];
  const feedConsumer = new Consumer({
    client: amqp,
    logger,
    queue: brokerNames(config.AMQP_PREFIX).streamQueue,
    schema: streamPolicy.schema,
    policy: streamPolicy,
    prefetch: STREAM_FEED_PREFETCH,
    queueType: config.AMQP_QUEUE_TYPE,
    bindings: { exchange, routingKeys: [...WEBHOOK_EVENTS] },
    handler: (event) => feeder.feed(event),
  });

  return {
    mongo,
    redis,
    amqp,
    repository,
    index,
    indexMaintenance,
    relay,
    exchange,
    streams: { log: eventLog, hub, retentionMs, logger },
    reads: {
      index,
      repository,
      logger,
      indexMissed: () => indexMaintenance.runSoon(),
      storeReads: new LoadShedder(
        config.STORE_FALLBACK_CONCURRENCY,
        'Listing from the database',
        config.STORE_FALLBACK_DEADLINE_MS,
      ),
    },
    effects: {
      async written(snapshots, outbox) {
        await indexMaintenance.record(snapshots);
        if (outbox) relay.offer([outbox]);
        else relay.runSoon(snapshots.map((s) => s.id));
      },
    },
    workers: [
      {
        name: 'timeline-index-maintenance',
        start: () => indexMaintenance.start(),
        stop: () => indexMaintenance.stop(),
      },
      { name: 'outbox-relay', start: () => relay.start(), stop: () => relay.stop() },
      {
        name: 'stream-tail',
        start: () => {
          hub.start();
          tail.start();
        },
        stop: async () => {
          await tail.stop();
          hub.stop();
        },
        // Open streams end with `reconnect` before the HTTP server closes (service-kit
        // registerShutdown), so their clients resume on another replica at once.
        endResponses: async () => hub.endAll(),
      },
      {
        name: 'stream-feeder',
        start: () => feedConsumer.start(),
        stop: async () => {
          await feedConsumer.stop();
          await feeder.flush();
        },
      },
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
 * enough to serve reads. Without MongoDB ingest responds 503; without the broker events wait in
 * the outbox. Anything down short of both read paths is "degraded", not unready.
 */
export const servesWith: ServesWith = (up) => up('mongo') || up('timeline');
