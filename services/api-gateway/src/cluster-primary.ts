import cluster, { type Worker } from 'node:cluster';
import { createLogger, startClusterObservability } from '@signal/service-kit';
import { loadConfig } from './config';

/**
 * The primary of a clustered gateway: forks the workers (each a whole gateway, server.ts),
 * replaces one that dies, serves the workers' summed metrics on the internal port, and on
 * SIGTERM/SIGINT asks every worker to shut down gracefully, then exits.
 */
export async function runPrimary(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.LOG_LEVEL);
  const observability = await startClusterObservability(config, logger);
  let stopping = false;
  let exitCode = 0;
  const listening = new WeakSet<Worker>();
  const fork = (): Worker => cluster.fork();
  cluster.on('listening', (worker) => listening.add(worker));
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping && !listening.has(worker)) {
      // It never served: a bad setting or an unreachable store. Starting it again would loop.
      logger.error({ pid: worker.process.pid, code }, 'gateway worker failed to start; stopping');
      exitCode = 1;
      stop('SIGTERM');
    }
    if (stopping) {
      // A worker's 'exit' may come before its 'disconnect', while it is still listed: count the
      // others only, or the primary waits for one that is gone.
      const others = Object.values(cluster.workers ?? {}).filter((w) => w && w !== worker && !w.isDead());
      if (others.length === 0) void observability.close().then(() => process.exit(exitCode));
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'gateway worker died; starting another');
    setTimeout(fork, 1000);
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutdown requested');
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) void observability.close().then(() => process.exit(exitCode));
    for (const w of workers) w?.process.kill('SIGTERM');
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  for (let i = 0; i < config.GATEWAY_WORKERS; i++) fork();
  logger.info({ workers: config.GATEWAY_WORKERS, port: config.PORT }, 'api-gateway primary started');
}
