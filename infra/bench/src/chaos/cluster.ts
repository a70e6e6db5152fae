import { ROUTES } from '@signal/contracts';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { connectRedis, keySlot, type RedisClient } from '@signal/service-kit';
import { silentLogger, uniqueName } from '@signal/test-kit';
import { request } from 'undici';
import { ROOT, SECRETS } from '../harness';
import { type ChaosOptions, type ChaosReport, type FaultInjector } from './report';
import { chaosOptions, runChaos } from './run';
import type { ChaosSystem } from './system';

/**
 * `pnpm chaos --cluster`: the chaos run's load (ingest, reads, live streams, webhooks; two
 * replicas of every deployable) against the Redis Cluster and the three-node RabbitMQ of
 * infra/local/cluster.sh, while a RabbitMQ node (the one every service connected to first) and
 * then a Redis master (its replica takes over; the old master comes back as a replica) are
 * SIGKILLed and started again after the outage. No service is restarted. Besides the chaos run's own
 * checks (nothing lost, nothing doubled beyond at-least-once, only 503 + Retry-After inside a
 * fault's window, nothing failing after it), a 60/min key whose counters live on the killed master
 * is driven through the failover: per minute window it may admit at most the limit plus the
 * requests the probe had in flight at the kill (Redis replicates asynchronously: an increment the
 * master acknowledged and had not yet passed on is lost with it).
 */

const run = promisify(execFile);
const CLUSTER_SH = path.join(ROOT, 'infra', 'local', 'cluster.sh');
const CLUSTER_ENV = path.join(ROOT, '.run', 'cluster.env');
const REDIS_BASE = Number(process.env.CLUSTER_REDIS_BASE ?? 7300);
/** The RabbitMQ node killed: the first of AMQP_URL, which every client connects to first. */
const RABBIT_NODE = 1;
/** The probe's limit (the listed plan's) and how many requests it keeps in flight. */
export const PROBE_LIMIT = 60;
export const PROBE_CONCURRENCY = 4;
/** Per window, what the probe may see admitted: the limit plus the increments a kill can lose. */
export const PROBE_BOUND = PROBE_LIMIT + PROBE_CONCURRENCY;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function clusterSh(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [CLUSTER_SH, ...args], { cwd: ROOT });
  return stdout.trim();
}

function readClusterEnv(): { REDIS_URL: string; AMQP_URL: string } {
  const env: Record<string, string> = {};
  for (const line of readFileSync(CLUSTER_ENV, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  if (!env.REDIS_URL || !env.AMQP_URL) throw new Error(`${CLUSTER_ENV} names no REDIS_URL or AMQP_URL`);
  return { REDIS_URL: env.REDIS_URL, AMQP_URL: env.AMQP_URL };
}

/** benchApiKey without blocking the load's event loop (the admin command run as a child). */
async function apiKey(
  system: ChaosSystem,
  email: string,
  perMinute: number,
): Promise<{ accountId: string; key: string }> {
  const cli = async (...args: string[]) =>
    (
      await run(process.execPath, [path.join(ROOT, 'services/api-gateway/dist/cli/admin.cli.js'), ...args], {
        env: {
          ...process.env,
          ...SECRETS,
          GATEWAY_DB: system.databases.gateway,
          REDIS_PREFIX: system.redisPrefix,
        },
      })
    ).stdout;
  const created = await cli(
    'create-account',
    '--email',
    email,
    '--per-minute',
    String(perMinute),
    '--per-day',
    '1000000',
  );
  const accountId = /account (acc_\S+)/.exec(created)?.[1];
  if (!accountId) throw new Error(`admin create-account printed no account: ${created}`);
  const key = /API key \(shown once\): (\S+)/.exec(
    await cli('create-key', '--account', accountId, '--name', 'probe'),
  )?.[1];
  if (!key) throw new Error('admin create-key printed no key');
  return { accountId, key };
}

/**
 * The node number (1-6) of the master that serves an account's keys, as a node says now (asked
 * afresh each time: the client's own slot map lags a failover).
 */
async function masterOf(redis: RedisClient, accountId: string): Promise<number> {
  const slot = keySlot(`{${accountId}}`);
  const ranges: unknown = await redis.call('CLUSTER', 'SLOTS');
  if (Array.isArray(ranges))
    for (const range of ranges) {
      if (!Array.isArray(range)) continue;
      const [from, to, master] = range as unknown[];
      if (
        typeof from === 'number' &&
        typeof to === 'number' &&
        from <= slot &&
        slot <= to &&
        Array.isArray(master)
      ) {
        const port = master[1];
        if (typeof port === 'number') return port - REDIS_BASE;
      }
    }
  throw new Error(`no master for slot ${slot}`);
}

/** Waits until every replica of every deployable answers /readyz with 200; ms it took. */
async function allReady(system: ChaosSystem, deadlineMs: number): Promise<number | undefined> {
  const started = Date.now();
  const processes = Object.values(system.services).flat();
  while (Date.now() - started < deadlineMs) {
    const ready = await Promise.all(processes.map((p) => p.ready()));
    if (ready.every(Boolean)) return Date.now() - started;
    await sleep(250);
  }
  return undefined;
}

export interface ProbeResponse {
  at: number;
  status: number | null;
  retryAfter: boolean;
  reset?: string;
}

export interface ClusterFigures {
  redis?: {
    /** The killed master (node number) and the account whose counters it held. */
    killedNode: number;
    /** ms from the kill until the cluster named another master for the slot. */
    failoverMs?: number;
    /** ms from the kill until the node was running again (as a replica). */
    downMs: number;
    /** ms after the node was back until every service was ready, none restarted. */
    servicesReadyMs?: number;
    probe: {
      sent: number;
      byStatus: Record<string, number>;
      /** 200s per minute window (by X-RateLimit-Reset). */
      admittedByWindow: Record<string, number>;
      /** ms from the kill to the last 503 the probe saw, if any. */
      last503Ms?: number;
    };
  };
  rabbitmq?: {
    killedNode: number;
    downMs: number;
    servicesReadyMs?: number;
  };
  violations: string[];
}

/** Drives a key with PROBE_CONCURRENCY clients until stopped. */
class LimitProbe {
  readonly responses: ProbeResponse[] = [];
  private running = true;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly url: string,
    private readonly key: string,
    private readonly t0: number,
  ) {}

  start(): void {
    for (let i = 0; i < PROBE_CONCURRENCY; i++) this.loops.push(this.loop());
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const at = Date.now() - this.t0;
      try {
        const res = await request(`${this.url}${ROUTES.getStats.path}`, {
          headers: { authorization: `Bearer ${this.key}` },
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
        });
        await res.body.dump();
        const reset = res.headers['x-ratelimit-reset'];
        this.responses.push({
          at,
          status: res.statusCode,
          retryAfter: res.headers['retry-after'] !== undefined,
          reset: Array.isArray(reset) ? reset[0] : reset,
        });
      } catch {
        this.responses.push({ at, status: null, retryAfter: false });
      }
      await sleep(150);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

function probeFigures(probe: LimitProbe): NonNullable<ClusterFigures['redis']>['probe'] {
  const byStatus: Record<string, number> = {};
  const admittedByWindow: Record<string, number> = {};
  let last503Ms: number | undefined;
  for (const r of probe.responses) {
    const status =
      r.status === null
        ? 'no response'
        : r.status === 503 && r.retryAfter
          ? '503 + Retry-After'
          : String(r.status);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (r.status === 200) {
      const w = r.reset ?? '(no X-RateLimit-Reset)';
      admittedByWindow[w] = (admittedByWindow[w] ?? 0) + 1;
    }
    if (r.status === 503 && r.at >= 0) last503Ms = Math.max(last503Ms ?? 0, r.at);
  }
  return {
    sent: probe.responses.length,
    byStatus,
    admittedByWindow,
    ...(last503Ms !== undefined ? { last503Ms } : {}),
  };
}

/**
 * A 60/min account whose limiter keys live on the same master as `accountId`'s (a third of
 * accounts do): accounts made a few at a time until one lands there.
 */
async function probeAccount(
  system: ChaosSystem,
  redis: RedisClient,
  node: number,
): Promise<{ accountId: string; key: string }> {
  for (let batch = 0; batch < 8; batch++) {
    const candidates = await Promise.all(
      Array.from({ length: 3 }, () => apiKey(system, `${uniqueName('probe')}@example.com`, PROBE_LIMIT)),
    );
    for (const c of candidates) if ((await masterOf(redis, c.accountId)) === node) return c;
  }
  throw new Error(`no probe account landed on redis node ${node}`);
}

/**
 * The faults and the figures they leave. The RabbitMQ node goes first; meanwhile the Redis fault
 * prepares its probe account (the admin command is slow on a loaded machine and would otherwise
 * stretch that fault's window).
 */
function clusterInjectors(redisUrl: string, figures: ClusterFigures): Record<string, FaultInjector> {
  let redis: Promise<RedisClient> | undefined;
  let target: Promise<{ node: number; probe: { accountId: string; key: string } }> | undefined;
  /** The master of the load's own account (its reads hit the failover) and a probe account on it. */
  const prepare = (system: ChaosSystem, accountId: string) => {
    redis ??= connectRedis(redisUrl, silentLogger, 10_000);
    target ??= (async () => {
      const client = await redis!;
      const node = await masterOf(client, accountId);
      return { node, probe: await probeAccount(system, client, node) };
    })();
    // Awaited by the Redis fault; a failure here is reported there.
    target.catch(() => undefined);
    return target;
  };
  return {
    'node:redis-master': async ({ system, accountId, outageMs }) => {
      const { node, probe: account } = await prepare(system, accountId);
      const client = await redis!;
      try {
        // The probe starts counting before the kill, so the window holds increments when it strikes.
        const t0 = Date.now() + 1500;
        const probe = new LimitProbe(system.gatewayUrl, account.key, t0);
        probe.start();
        await sleep(1500);
        await clusterSh('kill-redis', String(node));
        const killedAt = Date.now();
        let failoverMs: number | undefined;
        while (Date.now() - killedAt < Math.max(outageMs, 30_000)) {
          const master = await masterOf(client, accountId).catch(() => node);
          if (master !== node) {
            failoverMs = Date.now() - killedAt;
            break;
          }
          await sleep(100);
        }
        if (Date.now() - killedAt < outageMs) await sleep(outageMs - (Date.now() - killedAt));
        await clusterSh('start-redis', String(node));
        const downMs = Date.now() - killedAt;
        const servicesReadyMs = await allReady(system, 60_000);
        // The probe runs on through the chaos run's grace after the fault.
        await sleep(5000);
        await probe.stop();
        figures.redis = {
          killedNode: node,
          ...(failoverMs !== undefined ? { failoverMs } : {}),
          downMs,
          ...(servicesReadyMs !== undefined ? { servicesReadyMs } : {}),
          probe: probeFigures(probe),
        };
      } finally {
        client.disconnect();
      }
    },
    'node:rabbitmq': async ({ system, accountId, outageMs }) => {
      void prepare(system, accountId);
      await clusterSh('kill-rabbit', String(RABBIT_NODE));
      const killedAt = Date.now();
      await sleep(outageMs);
      await clusterSh('start-rabbit', String(RABBIT_NODE));
      const downMs = Date.now() - killedAt;
      const servicesReadyMs = await allReady(system, 60_000);
      figures.rabbitmq = {
        killedNode: RABBIT_NODE,
        downMs,
        ...(servicesReadyMs !== undefined ? { servicesReadyMs } : {}),
      };
    },
  };
}

/** The cluster run's options: the chaos run's load, the two node faults, load after them. */
export function clusterChaosOptions(short: boolean): ChaosOptions {
  const base = chaosOptions(short);
  return {
    ...base,
    seconds: short ? 90 : 150,
    outageSeconds: short ? 6 : 10,
    faults: ['node:rabbitmq', 'node:redis-master'],
    tailSeconds: short ? 20 : 30,
  };
}

function clusterViolations(report: ChaosReport, figures: ClusterFigures): string[] {
  const out: string[] = [];
  const { redis, rabbitmq } = figures;
  if (!redis) out.push('the Redis master was not killed');
  if (!rabbitmq) out.push('the RabbitMQ node was not killed');
  if (redis) {
    if (redis.failoverMs === undefined) out.push(`no replica took over from redis node ${redis.killedNode}`);
    if (redis.servicesReadyMs === undefined)
      out.push('services not all ready within 60 s of the Redis node coming back');
    for (const [w, n] of Object.entries(redis.probe.admittedByWindow))
      if (n > PROBE_BOUND) out.push(`limit probe: window ${w} admitted ${n}, bound ${PROBE_BOUND}`);
    for (const [status, n] of Object.entries(redis.probe.byStatus))
      if (!['200', '429', '503 + Retry-After'].includes(status)) out.push(`limit probe: ${n} × ${status}`);
  }
  if (rabbitmq && rabbitmq.servicesReadyMs === undefined)
    out.push('services not all ready within 60 s of the RabbitMQ node coming back');
  const restarted = Object.entries(report.crashRestarts);
  if (restarted.length) out.push(`services restarted: ${JSON.stringify(report.crashRestarts)}`);
  return out;
}

export function formatClusterFigures(f: ClusterFigures): string {
  const lines: string[] = [''];
  if (f.redis) {
    const r = f.redis;
    lines.push(
      `redis: master node ${r.killedNode} SIGKILLed; replica took over after ${r.failoverMs ?? '—'} ms; node back (as a replica) after ${r.downMs} ms; every service ready ${r.servicesReadyMs ?? '—'} ms later, none restarted`,
    );
    lines.push(
      `limit probe (${PROBE_LIMIT}/min key on that master, ${PROBE_CONCURRENCY} clients, bound ${PROBE_BOUND} a window): ${r.probe.sent} sent: ${Object.entries(
        r.probe.byStatus,
      )
        .map(([s, n]) => `${s}: ${n}`)
        .join(', ')}; admitted per window ${JSON.stringify(r.probe.admittedByWindow)}${
        r.probe.last503Ms !== undefined ? `; last 503 ${r.probe.last503Ms} ms after the kill` : ''
      }`,
    );
  }
  if (f.rabbitmq)
    lines.push(
      `rabbitmq: node rabbit-c${f.rabbitmq.killedNode} SIGKILLed (every service's first broker); back after ${f.rabbitmq.downMs} ms; every service ready ${f.rabbitmq.servicesReadyMs ?? '—'} ms later, none restarted`,
    );
  lines.push(
    f.violations.length ? `CLUSTER VIOLATIONS:\n- ${f.violations.join('\n- ')}` : 'cluster: no violations',
  );
  return lines.join('\n');
}

/**
 * Runs the chaos run against infra/local/cluster.sh's cluster (started here when it is not up,
 * and stopped again then). The services get the cluster's URLs and nothing else changes.
 */
export async function runClusterChaos(
  options: ChaosOptions,
): Promise<{ report: ChaosReport; cluster: ClusterFigures }> {
  const log = options.log ?? (() => undefined);
  const startedHere = !existsSync(CLUSTER_ENV);
  if (startedHere) {
    log('starting infra/local/cluster.sh');
    await clusterSh('up');
  }
  const env = readClusterEnv();
  const saved = { REDIS_URL: process.env.REDIS_URL, AMQP_URL: process.env.AMQP_URL };
  process.env.REDIS_URL = env.REDIS_URL;
  process.env.AMQP_URL = env.AMQP_URL;
  const figures: ClusterFigures = { violations: [] };
  try {
    const report = await runChaos({ ...options, injectors: clusterInjectors(env.REDIS_URL, figures) });
    figures.violations = clusterViolations(report, figures);
    report.violations.push(...figures.violations);
    return { report, cluster: figures };
  } finally {
    for (const [name, value] of Object.entries(saved))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    if (startedHere) await clusterSh('down').catch(() => undefined);
  }
}
