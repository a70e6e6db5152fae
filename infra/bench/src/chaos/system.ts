import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { connectRedis, deleteKeysMatching } from '@signal/service-kit';
import {
  stablePorts,
  infraUrls,
  silentLogger,
  startTcpProxy,
  testBrokerPrefix,
  uniqueName,
  viaProxy,
  type TcpProxy,
} from '@signal/test-kit';
import mongoose from 'mongoose';
import { SECRETS } from '../harness';
import { startBalancer, type Balancer } from './balancer';
import { removeBrokerPrefix } from '@signal/messaging';

const ROOT = path.join(__dirname, '..', '..', '..', '..');

export type ServiceName = 'signals' | 'stats' | 'webhooks-api' | 'webhooks-worker' | 'gateway';
export type Dependency = 'redis' | 'rabbitmq' | 'mongo';

/** Replicas of every deployable: the Kubernetes base runs each as several. */
export const REPLICAS = 2;

/**
 * One service process from its built output; SIGKILLed and started again on the same port, or
 * replaced by another checkout's build of it (a rolling upgrade's step).
 */
export class ServiceProcess {
  private child: ChildProcess | undefined;
  private readonly log: WriteStream;

  constructor(
    readonly name: ServiceName,
    /** 1-based, as the logs and the report name it (`signals-1`). */
    readonly replica: number,
    /** The checkout whose build it runs: this one, or a release's worktree (`pnpm compat`). */
    public root: string,
    private readonly entry: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    logDir: string,
  ) {
    this.log = createWriteStream(path.join(logDir, `${name}-${replica}.log`), { flags: 'a' });
  }

  get label(): string {
    return `${this.name}-${this.replica}`;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Start-ups that exited before they were ready and were started again (see `start`). */
  crashRestarts = 0;

  /**
   * Starts the process and resolves once /readyz responds 200 (ready or degraded). A process that
   * exits while starting (a dependency refused it at start-up) is started again after a second,
   * as an orchestrator would; each such restart is counted in `crashRestarts`.
   */
  async start(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let child = this.spawn();
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        this.crashRestarts += 1;
        await new Promise((r) => setTimeout(r, 1000));
        child = this.spawn();
        continue;
      }
      if (await this.ready()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${this.label} was not ready within ${timeoutMs} ms (see its log)`);
  }

  private spawn(): ChildProcess {
    const child = spawn(process.execPath, [path.join(this.root, this.entry)], {
      env: { PATH: process.env.PATH ?? '', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    this.child = child;
    return child;
  }

  async ready(): Promise<boolean> {
    const res = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(
      () => undefined,
    );
    return res?.status === 200;
  }

  /** SIGKILL: no shutdown hooks, in-flight work lost, as a crash or an OOM kill. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM and wait for the exit (SIGKILL after 10 s): the service's own graceful shutdown. */
  private async terminate(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }

  /**
   * Stops gracefully and starts `root`'s build on the same port: one replica of a rolling upgrade.
   * It may take up to `timeoutMs` to be ready, restarted as it exits, as a rollout waits for a
   * new pod's readiness (Kubernetes' progress deadline is 10 minutes): on a busy machine a start
   * can time out on the store a few times before it is up.
   */
  async replaceWith(root: string, timeoutMs = 180_000): Promise<void> {
    await this.terminate();
    this.root = root;
    this.log.write(`--- replaced by the build in ${root} ---\n`);
    await this.start(timeoutMs);
  }

  async stop(): Promise<void> {
    await this.terminate();
    this.log.end();
  }
}

export interface ChaosSystem {
  /** REPLICAS processes of each deployable. */
  services: Record<ServiceName, ServiceProcess[]>;
  proxies: Record<Dependency, TcpProxy>;
  /** The balancers in front of the HTTP deployables' replicas (the workers take from the queue). */
  balancers: Record<Exclude<ServiceName, 'webhooks-worker'>, Balancer>;
  /** The gateways' balancer. */
  gatewayUrl: string;
  /** The signals replicas' balancer (ingest). */
  signalsUrl: string;
  ingestToken: string;
  /** Databases of this run, on the real server (for the final checks, never through a proxy). */
  databases: { signals: string; stats: string; webhooks: string; gateway: string };
  redisPrefix: string;
  stop(): Promise<void>;
}

const SERVICE_ORDER: ServiceName[] = ['signals', 'stats', 'webhooks-api', 'webhooks-worker', 'gateway'];

/**
 * The whole system as processes, REPLICAS of each deployable, each HTTP deployable's replicas
 * behind a round-robin balancer; every process reaches Redis, RabbitMQ and the MongoDB-wire
 * server through one TCP proxy per dependency, so a dependency can be cut without touching the
 * machine's servers.
 */
export async function startChaosSystem(
  logDir: string,
  webhookRetryDelaysMs: string,
  /** Deployables run from another checkout's build (a release's worktree); the rest from this one. */
  roots: Partial<Record<ServiceName, string>> = {},
): Promise<ChaosSystem> {
  mkdirSync(logDir, { recursive: true });
  const urls = infraUrls();
  // A cluster's URL (several servers, or redis-cluster://) goes to the services as it is: its
  // nodes are killed one at a time (chaos/cluster.ts), never cut together through one proxy (the
  // dependency's proxy then fronts the first server and stays unused).
  const clustered = (url: string) => url.includes(',') || /^rediss?-cluster:/.test(url);
  const proxyTo = async (url: string, defaultPort: number) => {
    const u = new URL((url.split(',')[0] ?? url).replace(/^(rediss?)-cluster:/, '$1:'));
    return startTcpProxy(u.hostname, Number(u.port || defaultPort));
  };
  const through = (url: string, proxy: TcpProxy) => (clustered(url) ? url : viaProxy(url, proxy));
  const proxies: Record<Dependency, TcpProxy> = {
    redis: await proxyTo(urls.redisUrl, 6379),
    rabbitmq: await proxyTo(urls.amqpUrl, 5672),
    mongo: await proxyTo(urls.mongoUrl, 27017),
  };
  const run = uniqueName('chaos');
  const broker = testBrokerPrefix('chaos', removeBrokerPrefix);
  const redisPrefix = `${run}:`;
  const databases = {
    signals: `${run}_signals`,
    stats: `${run}_stats`,
    webhooks: `${run}_webhooks`,
    gateway: `${run}_gateway`,
  };
  const ingestToken = SECRETS.INGEST_TOKEN;
  const common = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    INTERNAL_JWT_PUBLIC_KEY: SECRETS.INTERNAL_JWT_PUBLIC_KEY,
    // Metrics on free ports: the defaults may be taken by a running local system.
    METRICS_PORT: '0',
    WORKER_METRICS_PORT: '0',
    MONGO_URL: viaProxy(urls.mongoUrl, proxies.mongo),
    REDIS_URL: through(urls.redisUrl, proxies.redis),
    AMQP_URL: through(urls.amqpUrl, proxies.rabbitmq),
    AMQP_PREFIX: broker.prefix,
    REDIS_PREFIX: redisPrefix,
  };
  // Every port of the run drawn at once (service and metrics ports): separate draws can name one
  // port twice, and the second process then fails to start with EADDRINUSE.
  const drawn = await stablePorts(2 * SERVICE_ORDER.length * REPLICAS);
  const take = () => drawn.pop()!;
  const ports = {} as Record<ServiceName, number[]>;
  for (const name of SERVICE_ORDER) {
    ports[name] = [];
    for (let i = 0; i < REPLICAS; i++) ports[name].push(take());
  }
  const balancers = {
    signals: await startBalancer(ports.signals),
    stats: await startBalancer(ports.stats),
    'webhooks-api': await startBalancer(ports['webhooks-api']),
    gateway: await startBalancer(ports.gateway),
  };
  const webhooksEnv = {
    WEBHOOKS_DB: databases.webhooks,
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    WEBHOOK_RETRY_DELAYS_MS: webhookRetryDelaysMs,
  };
  const env: Record<ServiceName, Record<string, string>> = {
    signals: { ...common, SIGNALS_DB: databases.signals, INGEST_TOKEN: ingestToken },
    stats: { ...common, STATS_DB: databases.stats },
    'webhooks-api': { ...common, ...webhooksEnv },
    'webhooks-worker': { ...common, ...webhooksEnv },
    gateway: {
      ...common,
      GATEWAY_DB: databases.gateway,
      INTERNAL_JWT_PRIVATE_KEY: SECRETS.INTERNAL_JWT_PRIVATE_KEY,
      API_KEY_PEPPER: SECRETS.API_KEY_PEPPER,
      SESSION_JWT_SECRET: SECRETS.SESSION_JWT_SECRET,
      SIGNALS_URL: balancers.signals.url,
      STATS_URL: balancers.stats.url,
      WEBHOOKS_URL: balancers['webhooks-api'].url,
      IP_RATE_LIMIT_PER_MINUTE: '1000000',
    },
  };
  const entries: Record<ServiceName, string> = {
    signals: 'services/signals/dist/main.js',
    stats: 'services/stats/dist/main.js',
    'webhooks-api': 'services/webhooks/dist/main.js',
    'webhooks-worker': 'services/webhooks/dist/worker.js',
    gateway: 'services/api-gateway/dist/main.js',
  };
  const services = {} as Record<ServiceName, ServiceProcess[]>;
  for (const name of SERVICE_ORDER) {
    services[name] = [];
    for (const [i, port] of ports[name].entries()) {
      const own: Record<string, string> =
        name === 'webhooks-worker'
          ? { WORKER_PORT: String(port), WORKER_METRICS_PORT: String(take()) }
          : { PORT: String(port), METRICS_PORT: String(take()) };
      services[name].push(
        new ServiceProcess(
          name,
          i + 1,
          roots[name] ?? ROOT,
          entries[name],
          port,
          { ...env[name], ...own },
          logDir,
        ),
      );
    }
  }
  const all = () => SERVICE_ORDER.flatMap((name) => services[name]);
  try {
    // The replicas of one deployable start together; the deployables in order (the gateway last).
    for (const name of SERVICE_ORDER) await Promise.all(services[name].map((s) => s.start()));
  } catch (err) {
    for (const s of all()) await s.stop();
    for (const b of Object.values(balancers)) await b.close();
    throw err;
  }

  return {
    services,
    proxies,
    balancers,
    gatewayUrl: balancers.gateway.url,
    signalsUrl: balancers.signals.url,
    ingestToken,
    databases,
    redisPrefix,
    async stop() {
      for (const p of Object.values(proxies)) p.restore();
      for (const name of [...SERVICE_ORDER].reverse()) await Promise.all(services[name].map((s) => s.stop()));
      await Promise.all(Object.values(balancers).map((b) => b.close()));
      await Promise.all(Object.values(proxies).map((p) => p.close()));
      await broker.cleanup().catch(() => undefined);
      const conn = await mongoose.createConnection(urls.mongoUrl).asPromise();
      for (const db of Object.values(databases))
        await conn
          .useDb(db)
          .dropDatabase()
          .catch(() => undefined);
      await conn.close();
      const redis = await connectRedis(urls.redisUrl, silentLogger, 10_000);
      await deleteKeysMatching(redis, `${redisPrefix}*`).catch(() => undefined);
      redis.disconnect();
    },
  };
}
