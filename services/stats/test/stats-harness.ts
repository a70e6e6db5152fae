import {
  GracefulShutdown,
  connectRedis,
  deleteKeysMatching,
  startWorkers,
  signInternalToken,
  startHttpServer,
  type RunningServer,
} from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, infraUrls, silentLogger, testDatabase } from '@signal/test-kit';
import { appFromDependencies } from '../src/app';
import { loadConfig } from '../src/config';
import { createDependencies, type StatsDependencies } from '../src/dependencies';

export interface StatsHarness {
  url: string;
  deps: StatsDependencies;
  /** A fresh gateway token each time (they live 30 s). */
  readonly auth: { Authorization: string };
  stop(): Promise<void>;
}

export async function startStats(
  label: string,
  prefix: string,
  env: Record<string, string> = {},
): Promise<StatsHarness> {
  const db = testDatabase(label);
  const { amqpUrl, redisUrl } = infraUrls();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: db.url,
    STATS_DB: db.dbName,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `${prefix}`,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
    ...env,
  });
  const deps = await createDependencies(config, silentLogger);
  await startWorkers(deps.workers);
  await deps.amqp.waitUntilConnected();
  const app = appFromDependencies(config, deps, silentLogger, new GracefulShutdown(silentLogger));
  const http: RunningServer = await startHttpServer(app, 0);
  return {
    url: http.url,
    deps,
    get auth() {
      return {
        Authorization: `Bearer ${signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'stats', 'acc_stats')}`,
      };
    },
    async stop() {
      await http.close();
      // Workers first (deps.close stops them again: a no-op): a running aggregates check would
      // take the cleared aggregates for lost ones and rebuild their ready mark, and the consumer
      // could write counters after the wipe.
      for (const w of [...deps.workers].reverse()) await w.stop();
      await deps.mongo.dropDatabase().catch(() => undefined);
      await deps.close();
      // Every stats key of this prefix (the aggregates, `stats:{agg}:`, and the cache), through
      // the Redis itself, not the service's client: a test may reach Redis through a proxy it cut.
      const redis = await connectRedis(redisUrl, silentLogger).catch(() => undefined);
      if (redis) await deleteKeysMatching(redis, `${prefix}stats:*`).catch(() => undefined);
      redis?.disconnect();
    },
  };
}
