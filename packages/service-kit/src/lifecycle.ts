import cluster from 'node:cluster';
import type { Lifecycle } from './health';
import { startHttpServer, type HttpEntry } from './http-server';
import { createLogger, type Logger } from './logger';
import { observeProcess, startObservability, type ObservabilityConfig } from './metrics';
import { GracefulShutdown } from './shutdown';

/** A background worker of a service (relay, consumer, index maintenance), started and stopped by the one runner. */
export interface BackgroundWorker {
  name: string;
  start(): Promise<void> | void;
  stop(): Promise<void>;
  /**
   * Ends the long-lived responses the worker serves (open event streams, each with a last event
   * telling its client to reconnect), before the HTTP server closes: a server that closes first
   * waits out its grace for them and then cuts them without a word.
   */
  endResponses?(): Promise<void>;
}

/** Starts a service's workers in their declared order (main.ts and the test harnesses alike). */
export async function startWorkers(workers: BackgroundWorker[]): Promise<void> {
  for (const worker of workers) await worker.start();
}

/**
 * The one shutdown order: the workers' long-lived responses end (`endResponses`), the HTTP server
 * stops taking requests, then the workers stop in reverse start order, then the connections
 * close in the order given.
 */
export function registerShutdown(
  shutdown: GracefulShutdown,
  parts: {
    http: { close(): Promise<void> };
    workers: BackgroundWorker[];
    connections: Array<[name: string, close: () => Promise<void>]>;
  },
): GracefulShutdown {
  for (const worker of parts.workers) {
    const endResponses = worker.endResponses?.bind(worker);
    if (endResponses) shutdown.register(`${worker.name} responses`, endResponses);
  }
  shutdown.register('http', () => parts.http.close());
  for (const worker of [...parts.workers].reverse()) shutdown.register(worker.name, () => worker.stop());
  for (const [name, close] of parts.connections) shutdown.register(name, close);
  return shutdown;
}

/** What every service's config has for the runner. */
export interface ServiceConfig extends ObservabilityConfig {
  LOG_LEVEL: string;
  PORT: number;
  HOST: string;
}

/** A service with an HTTP API and background workers, as its main.ts declares it. */
export interface ServiceDefinition<C extends ServiceConfig, D extends { workers: BackgroundWorker[] }> {
  name: string;
  loadConfig(): C;
  createDependencies(config: C, logger: Logger): Promise<D>;
  app(config: C, deps: D, logger: Logger, lifecycle: Lifecycle): HttpEntry;
  /** Closed in this order after the workers stop. */
  connections(deps: D): Array<[name: string, close: () => Promise<void>]>;
  /** Tracing, flushed last. */
  telemetry: { shutdown(): Promise<void> };
}

/**
 * The one start-up of a service: config, logger, metrics port, dependencies, workers in their
 * declared order, HTTP; then the one shutdown order (`registerShutdown`, metrics, tracing).
 * A failure to start is one line on stderr and exit code 1. As a node:cluster worker (the
 * gateway's one process per core) the metrics are served, summed, by the primary, and the worker
 * shuts down when its primary is gone.
 */
export async function runService<C extends ServiceConfig, D extends { workers: BackgroundWorker[] }>(
  service: ServiceDefinition<C, D>,
): Promise<void> {
  try {
    const config = service.loadConfig();
    const logger = createLogger(service.name, config.LOG_LEVEL);
    const shutdown = new GracefulShutdown(logger);
    const observability = cluster.isWorker
      ? (observeProcess(config, service.name), { close: async () => undefined })
      : await startObservability(config, service.name, logger);
    const deps = await service.createDependencies(config, logger);
    await startWorkers(deps.workers);
    const app = service.app(config, deps, logger, shutdown);
    const http = await startHttpServer(app, config.PORT, config.HOST);
    registerShutdown(shutdown, { http, workers: deps.workers, connections: service.connections(deps) })
      .register('metrics', () => observability.close())
      .register('telemetry', () => service.telemetry.shutdown())
      .listen();
    if (cluster.isWorker)
      process.once('disconnect', () => void shutdown.run().finally(() => process.exit(0)));
    logger.info({ url: http.url }, `${service.name} listening`);
  } catch (err) {
    process.stderr.write(
      `${service.name}: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  }
}
