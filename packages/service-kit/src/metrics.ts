import cluster from 'node:cluster';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';
import { z } from 'zod';
import { recordedStatus } from './client-gone';
import { DEFAULT_READINESS_TIMING, type ReadinessTiming } from './health';
import type { Logger } from './logger';

/**
 * Every metric of the system is declared here, once (prom-client's registry is per process, and
 * declaring a name twice throws). Labels are bounded sets: route patterns, queue names,
 * outcomes — never a client's path, id or key.
 */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

export const metrics = {
  httpDuration: lazy(
    () =>
      new Histogram({
        name: 'http_request_duration_seconds',
        help: 'HTTP request duration by route pattern',
        labelNames: ['service', 'method', 'route', 'status'],
        buckets: LATENCY_BUCKETS,
      }),
  ),
  /** Gateway: one per decision of the limiter (allowed, the window that refused, fallback…). */
  rateLimitDecisions: lazy(
    () =>
      new Counter({
        name: 'ratelimit_decisions_total',
        help: 'Rate-limit decisions at the gateway',
        labelNames: ['decision'],
      }),
  ),
  /**
   * Gateway: requests and connections refused or cut to keep one client from slowing others
   * (`account_in_flight`, `client_connections`, `slow_reader`).
   */
  fairnessRefusals: lazy(
    () =>
      new Counter({
        name: 'gateway_fairness_refusals_total',
        help: 'Requests refused or connections cut by the gateway to keep clients from slowing each other',
        labelNames: ['reason'],
      }),
  ),
  outboxPublishLag: lazy(
    () =>
      new Histogram({
        name: 'outbox_publish_lag_seconds',
        help: 'From the write that made an event to the broker confirming it',
        buckets: LAG_BUCKETS,
      }),
  ),
  outboxOldestPending: lazy(
    () =>
      new Gauge({
        name: 'outbox_oldest_pending_seconds',
        help: 'Age of the oldest unpublished event found by the last outbox sweep (0 when empty)',
      }),
  ),
  messagesHandled: lazy(
    () =>
      new Counter({
        name: 'messages_handled_total',
        help: 'Messages taken from a queue, by outcome (ack, retry, dead, poison)',
        labelNames: ['queue', 'outcome'],
      }),
  ),
  messageHandling: lazy(
    () =>
      new Histogram({
        name: 'message_handling_seconds',
        help: 'Time to handle one message',
        labelNames: ['queue'],
        buckets: LATENCY_BUCKETS,
      }),
  ),
  queueDepth: lazy(
    () =>
      new Gauge({
        name: 'queue_messages',
        help: 'Messages waiting in a consumer queue, its retry and dead-letter queues, or a delay cascade (read at scrape)',
        labelNames: ['queue', 'kind'],
        async collect() {
          const readings = await Promise.all([...queueDepthSources].map((probe) => probe.read()));
          this.reset();
          for (const depths of readings)
            for (const d of depths) this.set({ queue: d.queue, kind: d.kind }, d.messages);
        },
      }),
  ),
  readModelReady: lazy(
    () =>
      new Gauge({
        name: 'read_model_ready',
        help: '1 while a Redis read model is complete, 0 while it is being rebuilt',
        labelNames: ['model'],
      }),
  ),
  readModelLag: lazy(
    () =>
      new Histogram({
        name: 'read_model_apply_lag_seconds',
        help: 'From the source write to the read model reflecting it',
        labelNames: ['model'],
        buckets: LAG_BUCKETS,
      }),
  ),
  /** Signals: live streams (`GET /v1/signals/stream`) open in this process. */
  streamsOpen: lazy(
    () =>
      new Gauge({
        name: 'signal_streams_open',
        help: 'Live signal streams open in this process',
      }),
  ),
  /** Signals: events written to live streams (one per stream that received it). */
  streamEventsSent: lazy(
    () =>
      new Counter({
        name: 'signal_stream_events_sent_total',
        help: 'Events written to live signal streams, by event name',
        labelNames: ['event'],
      }),
  ),
  /** Signals: why live streams ended (client gone, slow client cut, shutdown). */
  streamsEnded: lazy(
    () =>
      new Counter({
        name: 'signal_streams_ended_total',
        help: 'Live signal streams ended, by reason (client, overflow, shutdown)',
        labelNames: ['reason'],
      }),
  ),
  /**
   * Webhooks worker: attempts by outcome (succeeded, retry, failed, claimed_elsewhere), and jobs
   * put back to wait outside the worker for want of a place (deferred): each deferral is a trip
   * through the broker, the cost to watch when one account's backlog outgrows its share.
   */
  webhookAttempts: lazy(
    () =>
      new Counter({
        name: 'webhook_attempts_total',
        help: 'Webhook delivery attempts by outcome',
        labelNames: ['outcome'],
      }),
  ),
  /** Webhooks worker: jobs put back to wait outside the worker, by why they got no place. */
  webhookDeferrals: lazy(
    () =>
      new Counter({
        name: 'webhook_deferrals_total',
        help: 'Webhook jobs put back to wait outside the worker, by reason (subscription_full, account_share, line_timeout)',
        labelNames: ['reason'],
      }),
  ),
  /**
   * Webhooks worker: jobs over their account's share waiting in the worker because the put-back
   * budget is spent (WEBHOOK_PUT_BACKS_PER_SECOND). Above zero only while an account's backlog
   * outgrows its share: the worker is behind.
   */
  webhookJobsWaitingOverShare: lazy(
    () =>
      new Gauge({
        name: 'webhook_jobs_waiting_over_share',
        help: "Webhook jobs over their account's share waiting in the worker for a place or a put-back",
      }),
  ),
  /**
   * Webhooks worker: first attempts from a lane waiting in the worker for a place of their
   * subscription (at its limit in flight), each at most a receiver timeout. Steady above zero:
   * receivers that hang or answer slowly, whose account's lanes back up while they wait.
   */
  webhookJobsWaitingForSubscription: lazy(
    () =>
      new Gauge({
        name: 'webhook_jobs_waiting_for_subscription',
        help: 'Webhook first attempts from a lane waiting in the worker for a place of their subscription',
      }),
  ),
  /** Deliveries removed past their retention, with their log entries, open marks and claims. */
  webhookDeliveriesRemoved: lazy(
    () =>
      new Counter({
        name: 'webhook_deliveries_removed_total',
        help: 'Webhook deliveries removed past their retention (WEBHOOK_RETENTION_MS), with their attempts',
      }),
  ),
  /** A document refused when written alone, after its batch's write failed (the rest landed). */
  storeWritesRefused: lazy(
    () =>
      new Counter({
        name: 'store_writes_refused_total',
        help: 'Documents the store refused, isolated from their batch',
        labelNames: ['collection'],
      }),
  ),
  /**
   * Documents a batched insert found stored already (a redelivered job or event). Expected near
   * zero: on FerretDB one such document makes its whole batch go in one transaction per document.
   */
  storeWritesAlreadyHeld: lazy(
    () =>
      new Counter({
        name: 'store_writes_already_held_total',
        help: 'Documents a batched insert found stored already (kept as they were)',
        labelNames: ['collection'],
      }),
  ),
  webhookAttemptDuration: lazy(
    () =>
      new Histogram({
        name: 'webhook_attempt_duration_seconds',
        help: 'Duration of one delivery attempt (request to the receiver)',
        buckets: LATENCY_BUCKETS,
      }),
  ),
  webhookEventToDelivery: lazy(
    () =>
      new Histogram({
        name: 'webhook_event_to_delivery_seconds',
        help: 'From the event to its successful delivery',
        buckets: LAG_BUCKETS,
      }),
  ),
};

export interface QueueDepth {
  queue: string;
  /** `delayed`: in a delay cascade, waiting for their time (no consumer sees them until then). */
  kind: 'ready' | 'retry' | 'dead' | 'delayed';
  messages: number;
}

/**
 * How long a scrape waits for the broker's answer about a consumer's queues before it reports
 * the last answer instead: a broker under a burst takes seconds per question, and a scrape that
 * waits on each of a worker's ~20 consumers in turn timed out (17 s) just when the depths matter.
 */
const QUEUE_DEPTH_WAIT_MS = 1000;

/**
 * One consumer's depths, asked of the broker at a scrape (not polled) and kept: a question still
 * unanswered when the scrape's wait ends goes on, and its answer serves a later scrape; one
 * question at a time, so slow answers never pile up. Until a first answer, and after a failed
 * one, it reports nothing.
 */
class QueueDepthProbe {
  private last: QueueDepth[] = [];
  private asking: Promise<void> | undefined;

  constructor(private readonly ask: () => Promise<QueueDepth[]>) {}

  async read(): Promise<QueueDepth[]> {
    this.asking ??= this.ask().then(
      (depths) => {
        this.last = depths;
        this.asking = undefined;
      },
      () => {
        // The broker refused or went away: no depths rather than old ones.
        this.last = [];
        this.asking = undefined;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, QUEUE_DEPTH_WAIT_MS);
    });
    await Promise.race([this.asking, waited]);
    clearTimeout(timer);
    return this.last;
  }
}
const queueDepthSources = new Set<QueueDepthProbe>();

/** A consumer reports its queues' depths at each scrape (see `QueueDepthProbe`). */
export function registerQueueDepthSource(source: () => Promise<QueueDepth[]>): () => void {
  metrics.queueDepth();
  const probe = new QueueDepthProbe(source);
  queueDepthSources.add(probe);
  return () => queueDepthSources.delete(probe);
}

export function metricsMiddleware(service: string): RequestHandler {
  const h = metrics.httpDuration();
  return (req, res, next) => {
    const end = h.startTimer({ service, method: req.method });
    // 'close': a request whose client left before its response counts too, as 499.
    res.once('close', () => {
      const status = recordedStatus(res);
      // Route pattern, not the raw path, to keep label cardinality bounded: the route's path under
      // the router it is mounted on (the first, for a route of several paths), or the router's
      // mount path for a request that never reached a route (its client left first).
      const routePath: unknown = req.route?.path;
      const pattern: unknown = Array.isArray(routePath) ? routePath[0] : routePath;
      const route =
        typeof pattern === 'string'
          ? `${req.baseUrl}${pattern}`
          : status === 404
            ? 'unmatched'
            : req.baseUrl || 'other';
      end({ route, status: String(status) });
    });
    next();
  };
}

/** Settings of the internal observability surface, spread into each service's config schema. */
export function observabilityEnv(defaultMetricsPort: number) {
  return {
    /** The metrics port: internal only (never the public one); 0 picks a free port. */
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(defaultMetricsPort),
    METRICS_HOST: z.string().default('127.0.0.1'),
    /** Share of successful requests that get an access line (errors always do). */
    ACCESS_LOG_SAMPLE: z.coerce.number().min(0).max(1).default(1),
    /** How long /readyz reuses one look at the dependencies (a probe period shorter than this sees the same look). */
    READINESS_CACHE_MS: z.coerce.number().int().min(0).default(DEFAULT_READINESS_TIMING.cacheMs),
    /** A readiness check that has not settled by then counts as down. */
    READINESS_CHECK_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(50)
      .default(DEFAULT_READINESS_TIMING.checkTimeoutMs),
  };
}

export interface ObservabilityConfig {
  METRICS_PORT: number;
  METRICS_HOST: string;
  ACCESS_LOG_SAMPLE: number;
}

/** The /readyz timing a service's config chose. */
export function readinessTiming(config: {
  READINESS_CACHE_MS: number;
  READINESS_CHECK_TIMEOUT_MS: number;
}): ReadinessTiming {
  return { cacheMs: config.READINESS_CACHE_MS, checkTimeoutMs: config.READINESS_CHECK_TIMEOUT_MS };
}

let accessLogSample = 1;
/** The access-log sampling chosen at start-up (see `startObservability`). */
export function accessLogSampleRate(): number {
  return accessLogSample;
}

let defaultMetricsStarted = false;

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the internal metrics endpoint (`GET /metrics`, Prometheus text) with process metrics,
 * and applies the access-log sampling. Separate from the public port, so neither clients nor
 * the internet can read it, and scraping never competes with the public routes' middleware.
 */
export async function startObservability(
  config: ObservabilityConfig,
  service: string,
  logger: Logger,
): Promise<MetricsServer> {
  observeProcess(config, service);
  return serveMetrics(config, logger, () => register.metrics());
}

/** How often the event-loop lag metric samples the loop (prom-client's default is 10 ms). */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * What every process of a service records (process metrics, the access-log sampling) without
 * serving it: the workers of a clustered service, whose primary serves them all.
 */
export function observeProcess(config: ObservabilityConfig, service: string): void {
  accessLogSample = config.ACCESS_LOG_SAMPLE;
  if (!defaultMetricsStarted) {
    // The event-loop lag histogram samples the loop every 100 ms, not prom-client's default 10:
    // its timer wakes an idle process 100 times a second (6 ms of CPU a second idle for the
    // gateway, 3.5 at 100 ms: docs/benchmarks.md), and a stall of 100 ms or more still lands
    // in a sample.
    collectDefaultMetrics({ labels: { service }, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    defaultMetricsStarted = true;
    // A cluster worker responds to its primary's metric requests (prom-client listens once one exists).
    if (cluster.isWorker) new AggregatorRegistry();
  }
}

/**
 * The metrics endpoint of a clustered service's primary: every worker's metrics, summed by
 * prom-client's AggregatorRegistry (asked of each worker at scrape time).
 */
export function startClusterObservability(
  config: ObservabilityConfig,
  logger: Logger,
): Promise<MetricsServer> {
  const aggregator = new AggregatorRegistry();
  return serveMetrics(config, logger, () => aggregator.clusterMetrics());
}

async function serveMetrics(
  config: ObservabilityConfig,
  logger: Logger,
  collect: () => Promise<string>,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    collect().then(
      (text) => res.writeHead(200, { 'content-type': register.contentType }).end(text),
      (err: unknown) => {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.METRICS_PORT, config.METRICS_HOST, () => resolve());
  });
  const url = `http://${config.METRICS_HOST}:${(server.address() as AddressInfo).port}/metrics`;
  logger.info({ url }, 'metrics endpoint (internal)');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
