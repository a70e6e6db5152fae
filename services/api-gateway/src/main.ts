// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry';
import { GracefulShutdown, createLogger, startHttpServer, startObservability } from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { createDependencies } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const observability = await startObservability(config, 'api-gateway', logger);
  const deps = await createDependencies(config, logger);
  const gateway = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(gateway, config.PORT, config.HOST);
  shutdown
    .register('http', () => http.close())
    .register('upstreams+redis+mongo', () => deps.close())
    .register('metrics', () => observability.close())
    .register('telemetry', async () => telemetry.shutdown())
    .listen();
  logger.info({ url: http.url }, 'api-gateway listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`api-gateway: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
