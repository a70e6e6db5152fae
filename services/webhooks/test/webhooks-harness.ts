import {
  GracefulShutdown,
  signInternalToken,
  startHttpServer,
  type RunningServer,
} from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, infraUrls, silentLogger, testDatabase } from '@signal/test-kit';
import { appFromDependencies } from '../src/app';
import { loadConfig, type WebhooksConfig } from '../src/config';
import { createDependencies, type WebhooksDependencies } from '../src/dependencies';
import { buildWorker, type Worker } from '../src/worker.app';


export interface WebhooksHarness {
  url: string;
  config: WebhooksConfig;
  deps: WebhooksDependencies;
  worker?: Worker;
  auth(accountId: string): { Authorization: string };
  stop(): Promise<void>;
}

/** Webhooks API (and, unless `worker: false`, the worker) in-process over real infra. */
export async function startWebhooks(options: {
  label: string;
  prefix: string;
  env?: Record<string, string>;
  worker?: boolean;
  dbName?: string;
}): Promise<WebhooksHarness> {
  const db = testDatabase(options.label);
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: db.url,
    WEBHOOKS_DB: options.dbName ?? db.dbName,
    AMQP_URL: infraUrls().amqpUrl,
    AMQP_PREFIX: options.prefix,
    INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
    WEBHOOK_RETRY_DELAYS_MS: '200,400,600',
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    WEBHOOK_SUBSCRIPTION_CACHE_MS: '0',
    ...options.env,
  });
  const lifecycle = new GracefulShutdown(silentLogger);
  const deps = await createDependencies(config, silentLogger, 'webhooks-test');
  await deps.amqp.waitUntilConnected();
  const app = appFromDependencies(config, deps, silentLogger, lifecycle);
  const http: RunningServer = await startHttpServer(app, 0);
  let worker: Worker | undefined;
  if (options.worker !== false) {
    worker = buildWorker(config, deps, silentLogger, lifecycle);
    await worker.start();
  }
  return {
    url: http.url,
    config,
    deps,
    worker,
    auth: (accountId) => ({
      Authorization: `Bearer ${signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'webhooks', accountId)}`,
    }),
    async stop() {
      await http.close();
      await worker?.stop();
      if (!options.dbName) await deps.mongo.dropDatabase().catch(() => undefined);
      await deps.close();
    },
  };
}
