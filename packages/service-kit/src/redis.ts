import { once } from 'node:events';
import Redis from 'ioredis';
import type { Logger } from './logger';

/**
 * Redis that fails fast while down (no offline queue, 1 s command timeout) and reconnects by
 * itself. Waits up to `readyWaitMs` for the first connection, then returns either way: callers
 * start even with Redis down and follow their documented fallback.
 */
export async function connectRedis(url: string, logger: Logger, readyWaitMs = 3000): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 100, 2000),
  });
  redis.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis error'));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([once(redis, 'ready'), new Promise((r) => (timer = setTimeout(r, readyWaitMs)))]).catch(
    () => undefined,
  );
  clearTimeout(timer);
  return redis;
}
