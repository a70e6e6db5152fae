// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry.worker';
import { GracefulShutdown, createLogger, startHttpServer, startObservability } from '@signal/service-kit';
import { loadConfig } from './config';
import { createDependencies } from './dependencies';
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
  await worker.start();
  const http = await startHttpServer(worker.health, config.PORT, config.HOST);
  shutdown
    .register('consumers', () => worker.stop())
    .register('health-http', () => http.close())
    .register('rabbitmq+mongo', () => deps.close())
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  logger.info({ health: http.url }, 'webhooks worker running');
}

main().catch((err: unknown) => {
  process.stderr.write(`webhooks-worker: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
