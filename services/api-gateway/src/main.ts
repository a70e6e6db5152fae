import { GracefulShutdown, createLogger, startHttpServer } from '@signal/service-kit';
import { buildApp } from './app';
import { loadConfig, trustProxySetting } from './config';
import { createDependencies, healthChecks } from './dependencies';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.LOG_LEVEL);
  const shutdown = new GracefulShutdown(logger);
  const deps = await createDependencies(config, logger);
  const app = buildApp({
    logger,
    lifecycle: shutdown,
    checks: healthChecks(deps),
    auth: deps.auth,
    accounts: deps.accounts,
    sessionSecret: config.SESSION_JWT_SECRET,
    sessionTtlSeconds: config.SESSION_TTL_SECONDS,
    upstreams: deps.upstreams,
    tokens: deps.tokens,
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    publicUrl: config.PUBLIC_URL,
  });
  const http = await startHttpServer(app, config.PORT, config.HOST);
  shutdown
    .register('http', () => http.close())
    .register('upstreams+redis+mongo', () => deps.close())
    .listen();
  logger.info({ url: http.url }, 'api-gateway listening');
}

main().catch((err: unknown) => {
  process.stderr.write(`api-gateway: failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
