import {
  GracefulShutdown,
  connectRedis,
  deleteKeysMatching,
  registerShutdown,
  signInternalToken,
  startWorkers,
  startHttpServer,
  type RunningServer,
} from '@signal/service-kit';
import {
  TEST_INTERNAL_KEYS,
  silentLogger,
  testBrokerPrefix,
  testDatabase,
  infraUrls,
} from '@signal/test-kit';
import { appFromDependencies } from '../src/app';
import { loadConfig, type SignalsConfig } from '../src/config';
import { connections, createDependencies, type SignalsDependencies } from '../src/dependencies';
import { removeBrokerPrefix } from '@signal/messaging';

export const INGEST_TOKEN = 'test-ingest-token-0123456789abcdef';

export interface SignalsHarness {
  url: string;
  config: SignalsConfig;
  deps: SignalsDependencies;
  token: (accountId?: string) => string;
  ingestAuth: { Authorization: string };
  stop(): Promise<void>;
}

/** The signals service in-process on a random port, over its own database and broker prefix. */
export async function startSignals(
  label: string,
  overrides: Partial<Record<string, string>> = {},
  shared?: { prefix: string; dbName?: string },
): Promise<SignalsHarness> {
  const db = testDatabase(label);
  const broker = shared ? undefined : testBrokerPrefix(label, removeBrokerPrefix);
  const { amqpUrl, redisUrl } = infraUrls();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: db.url,
    SIGNALS_DB: shared?.dbName ?? db.dbName,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: shared?.prefix ?? broker!.prefix,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: `${db.dbName}:`,
    // TIMELINE_CHECK_INTERVAL_MS stays at its production 1 s: the tests that lose the index or
    // fail its updates nudge the maintenance, and a faster tick costs every idle harness a store
    // read and a Redis call each time (docs/development.md "The test command").
    INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
    INGEST_TOKEN,
    OUTBOX_INTERVAL_MS: '100',
    ...overrides,
  });
  const lifecycle = new GracefulShutdown(silentLogger);
  const deps = await createDependencies(config, silentLogger);
  await startWorkers(deps.workers);
  const app = appFromDependencies(config, deps, silentLogger, lifecycle);
  const http: RunningServer = await startHttpServer(app, 0);
  // A harness with a database of its own drops it once HTTP and the workers have stopped, before
  // the connections close; its Redis keys (the index, the event stream) go in `stop`, once
  // nothing of the service can write them again: a running index maintenance would take a
  // cleared index for a lost one and rebuild it, and the relay would re-apply snapshots to it.
  const wipe: Array<[string, () => Promise<void>]> = shared?.dbName
    ? []
    : [
        [
          'test data',
          () =>
            deps.mongo.dropDatabase().then(
              () => undefined,
              () => undefined,
            ),
        ],
      ];
  registerShutdown(lifecycle, { http, workers: deps.workers, connections: [...wipe, ...connections(deps)] });
  return {
    url: http.url,
    config,
    deps,
    token: (accountId = 'acc_test') => signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'signals', accountId),
    ingestAuth: { Authorization: `Bearer ${INGEST_TOKEN}` },
    async stop() {
      await lifecycle.run();
      await broker?.cleanup();
      if (shared?.dbName) return;
      // Through the Redis itself, not the service's client: a test may reach Redis through a
      // proxy it cut, and the keys must go all the same.
      const redis = await connectRedis(redisUrl, silentLogger).catch(() => undefined);
      if (redis) await deleteKeysMatching(redis, `${config.REDIS_PREFIX}*`).catch(() => undefined);
      redis?.disconnect();
    },
  };
}

let counter = 0;
/** A valid ingest body; `over` replaces top-level parts. */
export function signalInput(over: Record<string, unknown> = {}) {
  counter += 1;
  return {
    token: {
      symbol: `TKN${counter}`,
      name: `Token ${counter}`,
      contract: `So1ana${String(counter).padStart(10, '0')}pump`,
      age_hours: 3.5,
      dex_paid: true,
      socials: { twitter: 'https://x.com/token', telegram: 'https://t.me/token' },
    },
    metrics: {
      mcap_entry: 100_000,
      mcap_current: 150_000,
      volume_24h: 50_000,
      holders: 420,
      liquidity: 30_000,
    },
    type: 'new',
    is_premium: false,
    ...over,
  };
}
