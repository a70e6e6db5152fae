import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  GracefulShutdown,
  registerShutdown,
  signInternalToken,
  startHttpServer,
  startWorkers,
  type RunningServer,
} from '@signal/service-kit';
import {
  TEST_INTERNAL_KEYS,
  infraUrls,
  silentLogger,
  startReceiver,
  testDatabase,
  type Receiver,
} from '@signal/test-kit';
import { appFromDependencies } from '../src/app';
import { loadConfig, type WebhooksConfig } from '../src/config';
import { connections, createDependencies, type WebhooksDependencies } from '../src/dependencies';
import { buildWorker, type Worker, type WorkerTestHooks } from '../src/worker.app';

export interface WebhooksHarness {
  url: string;
  config: WebhooksConfig;
  deps: WebhooksDependencies;
  worker?: Worker;
  auth(accountId: string): { Authorization: string };
  /** Stops the worker's parts in the shutdown's order, leaving the API up. */
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Webhooks API (and, unless `worker: false`, the worker) in-process over real infra, started
 * and stopped by the same lifecycle runner as main.ts and worker.ts.
 */
export async function startWebhooks(options: {
  label: string;
  prefix: string;
  env?: Record<string, string>;
  worker?: boolean;
  dbName?: string;
  testHooks?: WorkerTestHooks;
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
  const worker =
    options.worker === false
      ? undefined
      : buildWorker(config, deps, silentLogger, lifecycle, options.testHooks);
  const workers = worker?.workers ?? [];
  await startWorkers(workers);
  const dropDatabase = async () => {
    if (!options.dbName) await deps.mongo.dropDatabase().catch(() => undefined);
  };
  registerShutdown(lifecycle, {
    http,
    workers,
    connections: [['test-database', dropDatabase], ...connections(deps)],
  });
  return {
    url: http.url,
    config,
    deps,
    worker,
    auth: (accountId) => ({
      Authorization: `Bearer ${signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'webhooks', accountId)}`,
    }),
    async stopWorker() {
      for (const w of [...workers].reverse()) await w.stop();
    },
    stop: () => lifecycle.run(),
  };
}

/**
 * A receiver that answers each path from its script in `answers`: each status once, the last one
 * from then on (200 for a path without a script).
 */
export async function startScriptedReceiver(): Promise<{
  receiver: Receiver;
  answers: Map<string, number[]>;
}> {
  const answers = new Map<string, number[]>();
  const receiver = await startReceiver((req) => {
    const queue = answers.get(req.path) ?? [];
    return { status: queue.length > 1 ? queue.shift()! : (queue[0] ?? 200) };
  });
  return { receiver, answers };
}

/** Holds every request (headers read, no answer) until `open()`; then answers all, and all later ones, 200. */
export async function startGatedReceiver() {
  const held: Array<{ path: string; res: ServerResponse }> = [];
  const answered: string[] = [];
  const sockets = new Set<Socket>();
  let gateOpen = false;
  const answer = (path: string, res: ServerResponse) => {
    answered.push(path);
    res.writeHead(200).end('ok');
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const path = req.url ?? '';
    if (gateOpen) answer(path, res);
    else held.push({ path, res });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Requests received and not answered. */
    held: () => held.length,
    /** Paths answered 200 (each request once). */
    answered,
    open() {
      gateOpen = true;
      for (const h of held.splice(0)) answer(h.path, h.res);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
