// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry.worker';
import {
  GracefulShutdown,
  createLogger,
  registerShutdown,
  startHttpServer,
  startObservability,
  startWorkers,
} from '@signal/service-kit';
import { loadConfig } from './config';
import { connections, createDependencies } from './dependencies';
import { buildWorker } from './worker.app';

/** The delivery worker entry point (scale it with delivery volume); WORKER_PORT serves only health. */
async function main(): Promise<void> {
  const config = loadConfig({
    ...process.env,
    PORT: process.env.WORKER_PORT ?? '4004',
    METRICS_PORT: process.env.WORKER_METRICS_PORT ?? '9404',
  });
  const logger = createLogger('webhooks-worker', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const observability = await startObservability(config, 'webhooks-worker', logger);
  const deps = await createDependencies(config, logger, 'webhooks-worker');
  const worker = buildWorker(config, deps, logger, shutdown);
  await startWorkers(worker.workers);
  const http = await startHttpServer(worker.health, config.PORT, config.HOST);
  registerShutdown(shutdown, { http, workers: worker.workers, connections: connections(deps) })
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  logger.info({ health: http.url }, 'webhooks worker running');
}

main().catch((err: unknown) => {
  process.stderr.write(
    `webhooks-worker: failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
