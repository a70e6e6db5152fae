// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry.api';
import {
  GracefulShutdown,
  createLogger,
  registerShutdown,
  startHttpServer,
  startObservability,
} from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { connections, createDependencies } from './dependencies';

/** The subscriptions API (scale it with HTTP traffic); deliveries run in worker.ts. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('webhooks-api', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const observability = await startObservability(config, 'webhooks-api', logger);
  const deps = await createDependencies(config, logger, 'webhooks-api');
  const app = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(app, config.PORT, config.HOST);
  registerShutdown(shutdown, { http, workers: [], connections: connections(deps) })
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  logger.info({ url: http.url }, 'webhooks api listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`webhooks: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
