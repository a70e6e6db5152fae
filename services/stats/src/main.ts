// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry';
import {
  GracefulShutdown,
  createLogger,
  registerShutdown,
  startHttpServer,
  startWorkers,
  startObservability,
} from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { connections, createDependencies } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('stats', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const observability = await startObservability(config, 'stats', logger);
  const deps = await createDependencies(config, logger);
  await startWorkers(deps.workers);
  const app = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(app, config.PORT, config.HOST);
  registerShutdown(shutdown, { http, workers: deps.workers, connections: connections(deps) })
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  logger.info({ url: http.url }, 'stats listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`stats: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
