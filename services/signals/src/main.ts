import { GracefulShutdown, createLogger, startHttpServer } from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { createDependencies } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('signals', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const deps = await createDependencies(config, logger);
  deps.relay.start();
  const app = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(app, config.PORT, config.HOST);
  shutdown
    .register('http', () => http.close())
    .register('outbox-relay', () => deps.relay.stop())
    .register('rabbitmq', () => deps.amqp.close())
    .register('mongo', () => deps.mongo.close())
    .listen();
  logger.info({ url: http.url }, 'signals listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`signals: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
