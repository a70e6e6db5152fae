// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry';
import cluster from 'node:cluster';
import {
  GracefulShutdown,
  createLogger,
  observeProcess,
  startHttpServer,
  startObservability,
} from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { createDependencies } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  // A cluster worker's metrics are served, summed with the others', by the primary.
  const observability = cluster.isWorker
    ? (observeProcess(config, 'api-gateway'), { close: async () => undefined })
    : await startObservability(config, 'api-gateway', logger);
  const deps = await createDependencies(config, logger);
  const gateway = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(gateway, config.PORT, config.HOST);
  shutdown
    .register('http', () => http.close())
    .register('upstreams+redis+mongo', () => deps.close())
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  // A worker whose primary is gone (killed) must not linger holding connections.
  if (cluster.isWorker) process.once('disconnect', () => void shutdown.run().finally(() => process.exit(0)));
  logger.info({ url: http.url }, 'api-gateway listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`api-gateway: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
