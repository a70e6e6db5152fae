import { GracefulShutdown, createLogger, startHttpServer } from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { createDependencies } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('stats', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const deps = await createDependencies(config, logger);
  await deps.consumer.start();
  deps.amqp.start();
  const app = appFromDependencies(config, deps, logger, shutdown);
  const http = await startHttpServer(app, config.PORT, config.HOST);
  shutdown
    .register('http', () => http.close())
    .register('consumer+rabbitmq+redis+mongo', () => deps.close())
    .listen();
  logger.info({ url: http.url }, 'stats listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`stats: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
