import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  InternalTokenCache,
  deleteKeysMatching,
  redisClient,
  signInternalToken,
  numberOption,
  readCommandLine,
  type CliSpec,
  type RedisClient,
} from '@signal/service-kit';
import { brokerNames, deleteBrokerNames } from '@signal/messaging';
import { connect } from 'amqplib';
import autocannon from 'autocannon';
import mongoose from 'mongoose';

export const ROOT = path.join(__dirname, '..', '..', '..');

const internalKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });

export const SECRETS = {
  INTERNAL_JWT_PRIVATE_KEY: internalKeys.privateKey
    .export({ format: 'der', type: 'pkcs8' })
    .toString('base64'),
  INTERNAL_JWT_PUBLIC_KEY: internalKeys.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  API_KEY_PEPPER: randomBytes(24).toString('base64url'),
  SESSION_JWT_SECRET: randomBytes(24).toString('base64url'),
  INGEST_TOKEN: randomBytes(24).toString('base64url'),
};

const internalTokens = new InternalTokenCache((audience, accountId, ttl) =>
  signInternalToken(internalKeys.privateKey, audience, accountId, ttl),
);

/**
 * A gateway token for calling a service directly (the baselines), cached the way the gateway
 * caches them: minting one (ES256) per request would put the load generator's signing into
 * every direct sample of the stats and signals benches.
 */
export function benchInternalToken(audience: string, accountId: string): string {
  return internalTokens.get(audience, accountId);
}

export function infra() {
  const { MONGO_URL, REDIS_URL, AMQP_URL } = process.env;
  if (!MONGO_URL || !REDIS_URL || !AMQP_URL)
    throw new Error('run through `pnpm bench` (it starts the infrastructure)');
  return { MONGO_URL, REDIS_URL, AMQP_URL };
}

/** The bench's own Redis connection, to wherever REDIS_URL points (a TCP server or a Unix socket). */
export function benchRedis(): RedisClient {
  return redisClient(infra().REDIS_URL);
}

/**
 * What a bench run named `db` left behind: its Redis keys (`<db>:`), its broker names (`<db>.`)
 * and the given databases (each drop given 10 s: a store that hangs does not hold the run).
 */
export async function dropBenchData(db: string, redis: RedisClient, databases: string[]): Promise<void> {
  await deleteKeysMatching(redis, `${db}:*`).catch(() => undefined);
  await dropBrokerPrefix(`${db}.`).catch(() => undefined);
  const conn = await mongoose.createConnection(infra().MONGO_URL).asPromise();
  for (const name of databases) {
    await Promise.race([
      conn
        .useDb(name)
        .dropDatabase()
        .catch(() => undefined),
      new Promise((r) => setTimeout(r, 10_000)),
    ]);
  }
  await conn.close(true);
}

/**
 * Removes the exchanges and queues a bench run's services declared under its AMQP prefix (the
 * broker is the machine's and outlives the run: otherwise each run of the gateway, signals and
 * stats benches would leave its event exchange behind).
 */
export async function dropBrokerPrefix(prefix: string): Promise<void> {
  const conn = await connect(infra().AMQP_URL);
  try {
    const channel = await conn.createConfirmChannel();
    channel.on('error', () => undefined);
    await deleteBrokerNames(channel, brokerNames(prefix));
  } finally {
    await conn.close().catch(() => undefined);
  }
}

export interface Proc {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Starts one service from its built output and waits for /readyz. */
export async function startService(
  entry: string,
  port: number,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<Proc> {
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, entry)], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      // The services' young generation as their images and the run command set it.
      ...(/services\/(signals|stats)\//.test(entry) ? { NODE_OPTIONS: '--max-semi-space-size=8' } : {}),
      ...(/services\/api-gateway\//.test(entry) ? { NODE_OPTIONS: '--max-semi-space-size=16' } : {}),
      ...infra(),
      ...SECRETS,
      PORT: String(port),
      WORKER_PORT: String(port),
      // Internal metrics ports: any free one (several services, and other runs, share the machine).
      METRICS_PORT: '0',
      WORKER_METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** The p-quantile (0..1) of samples sorted ascending; NaN when there are none. */
export const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! : NaN;

export async function load(
  name: string,
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
  /** Offered requests per second in all (default: as many as the server takes). */
  rate?: number,
): Promise<LoadResult> {
  const r = await autocannon({
    url,
    headers,
    duration: seconds,
    connections,
    pipelining: 1,
    ...(rate ? { overallRate: rate } : {}),
  });
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
  };
}

/** The machine's busy share (all cores, 0..1) over the next `ms`, from /proc/stat; undefined off Linux. */
async function busyShare(ms: number): Promise<number | undefined> {
  const read = async () => {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return { idle, total: ticks.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = await read();
    await new Promise((r) => setTimeout(r, ms));
    const b = await read();
    return b.total > a.total ? 1 - (b.idle - a.idle) / (b.total - a.total) : 0;
  } catch {
    return undefined;
  }
}

/**
 * Before a measured phase: waits (at most `maxMs`) until the machine is quiet — what a rebuild, a
 * bulk load or a service's start left running (its garbage collection, FerretDB's statistics,
 * PostgreSQL's writes) is not what a read costs — and returns how long it waited, for the report.
 */
export async function settle(maxMs = 30_000, quietBelow = 0.15): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < maxMs) {
    const busy = await busyShare(500);
    if (busy === undefined || busy < quietBelow) break;
  }
  return Date.now() - started;
}

/** Sequential timed requests, for endpoints too slow for a load generator to be meaningful. */
export async function timed(name: string, count: number, fn: () => Promise<void>): Promise<LoadResult> {
  // The load generator's own garbage is collected before the row, not inside one of its samples
  // (pnpm bench runs node with --expose-gc): a collection of the bulk load's leftovers would
  // otherwise land inside a sub-millisecond request and dwarf it.
  globalThis.gc?.();
  const samples: number[] = [];
  const started = Date.now();
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  samples.sort((a, b) => a - b);
  const q = (p: number) => percentile(samples, p);
  return {
    name,
    rps: count / ((Date.now() - started) / 1000),
    p50: q(0.5),
    p99: q(0.99),
    errors: 0,
    non2xx: 0,
  };
}

export function table(rows: LoadResult[]): void {
  console.log(
    `${'scenario'.padEnd(46)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'errors'.padStart(7)} ${'non2xx'.padStart(7)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(46)} ${r.rps.toFixed(0).padStart(9)} ${r.p50.toFixed(2).padStart(9)} ${r.p99.toFixed(2).padStart(9)} ${String(r.errors).padStart(7)} ${String(r.non2xx).padStart(7)}`,
    );
  }
}

export function progress(label: string, done: number, total: number, started: number): void {
  const pct = Math.floor((done / total) * 100);
  process.stderr.write(
    `\r${label} [${'#'.repeat(Math.floor(pct / 4)).padEnd(25, '.')}] ${pct}% ${done}/${total} (${Math.round(done / Math.max(0.001, (Date.now() - started) / 1000))}/s)`,
  );
  if (done >= total) process.stderr.write('\n');
}

/**
 * An account and one API key for it, made with the operator CLI: without practical limits unless
 * `limits` are given.
 */
export function benchApiKey(
  gatewayDb: string,
  redisPrefix: string,
  email: string,
  limits: { perMinute: number; perDay: number } = { perMinute: 100_000_000, perDay: 1_000_000_000 },
): { accountId: string; key: string } {
  const cli = (...args: string[]) =>
    execFileSync(process.execPath, [path.join(ROOT, 'services/api-gateway/dist/cli/admin.cli.js'), ...args], {
      env: { ...process.env, ...SECRETS, GATEWAY_DB: gatewayDb, REDIS_PREFIX: redisPrefix },
    }).toString();
  const created = cli(
    'create-account',
    '--email',
    email,
    '--per-minute',
    String(limits.perMinute),
    '--per-day',
    String(limits.perDay),
  );
  const accountId = /account (acc_\S+)/.exec(created)?.[1];
  if (!accountId) throw new Error(`admin create-account printed no account: ${created}`);
  const keyOut = cli('create-key', '--account', accountId, '--name', 'bench');
  const key = /API key \(shown once\): (\S+)/.exec(keyOut)?.[1];
  if (!key) throw new Error('admin create-key printed no key');
  return { accountId, key };
}

/** A whole-number option ≥ 1 from a strict command line, or exit 2 naming it with the usage. */
export function wholeNumberOption(
  cli: CliSpec,
  values: Record<string, string | boolean | undefined>,
  name: string,
): number {
  return readCommandLine(cli, () => numberOption(values[name], name));
}

/** CPU time (µs) used by each named group of this machine's processes between two readings. */
export type CpuGroups = Map<string, number>;

/** One reading: CPU time (µs) used so far by each process, by the group it belongs to. */
export type CpuReading = Map<string, Map<number, number>>;

/** Linux counts process CPU in clock ticks of 10 ms (USER_HZ 100 on every mainstream kernel). */
const MICROS_PER_TICK = 10_000;

/**
 * CPU time used so far by the processes `groupOf` names (undefined: not counted), read from
 * /proc, process by process. Empty where there is no /proc.
 */
export function cpuByGroup(groupOf: (pid: number, command: string) => string | undefined): CpuReading {
  const groups: CpuReading = new Map();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return groups;
  }
  for (const p of pids) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const command = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const group = groupOf(Number(p), command);
      if (group === undefined) continue;
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      const byPid = groups.get(group) ?? new Map<number, number>();
      byPid.set(Number(p), ticks * MICROS_PER_TICK);
      groups.set(group, byPid);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return groups;
}

/**
 * Every RabbitMQ, FerretDB and PostgreSQL process on the machine by what it runs, and the
 * processes `named` by their id: the groups a bench of the broker and the store reads (run alone,
 * or the figures carry others' work).
 */
export const machineGroups =
  (named: ReadonlyMap<number | undefined, string>) =>
  (pid: number, command: string): string | undefined =>
    named.get(pid) ??
    (command.includes('beam.smp')
      ? 'RabbitMQ'
      : /ferretdb/i.test(command)
        ? 'FerretDB'
        : command.startsWith('postgres')
          ? 'PostgreSQL'
          : undefined);

/**
 * What each group used between two readings (µs): each process of the second reading, less what
 * it had used at the first (nothing, if it started since). A process that ended between the two
 * takes its time with it (a PostgreSQL backend closed mid-run is undercounted), and is never
 * counted as time given back.
 */
export function cpuBetween(before: CpuReading, after: CpuReading): CpuGroups {
  return new Map(
    [...after].map(([group, byPid]) => {
      let used = 0;
      for (const [pid, us] of byPid) used += us - (before.get(group)?.get(pid) ?? 0);
      return [group, used];
    }),
  );
}
