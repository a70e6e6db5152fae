import { ROUTES, fillPath } from '@signal/contracts';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseCliArgs, readCommandLine, type RedisClient } from '@signal/service-kit';
import { Cluster } from 'ioredis';
import { Agent, request } from 'undici';
import { comparePerRequest, summarize, type LoadedProfile } from './cpu-profile';
import {
  ROOT,
  SECRETS,
  benchApiKey,
  benchInternalToken,
  dropBenchData,
  load,
  startService,
  wholeNumberOption,
  type LoadResult,
  type Proc,
  benchRedis,
} from './harness';

/**
 * pnpm bench gateway [--seconds 8] [--connections 50] [--rounds 3] [--workers 1] [--rate 1000]
 *   [--variant-node-options="…"]  adds (v): (b) with those options on node's command line, same rounds
 *   [--variant-entry path]        adds (v): another build of the gateway (an A/B of code), same rounds
 *   [--skip a,c,d]                leaves those out (more rounds in the same time for the targets' rows)
 *   [--profile-interval µs] [--profile-rate req/s]   the profiling pass's sampling and load
 *
 * One route seven ways, in interleaved rounds (a, b, c, d, p, f, a, b, …; medians reported), so a
 * machine shared with other work skews every scenario alike:
 *   (a) the signals service directly,
 *   (b) through the gateway as production runs it (API key, per-account limits, usage),
 *   (c) through nginx (a proxy and nothing else),
 *   (d) through the same gateway with authentication and limits switched off: the production
 *       composition with an API path that admits every request (gateway-auth-off.ts),
 *   (p) through the Express gateway a team would build instead (express-gateway.ts): the key
 *       looked up by its hash in Redis, express-rate-limit + rate-limit-redis for the minute and
 *       the day, http-proxy-middleware,
 *   (f) through a bare node:http + undici Pool.dispatch proxy (bare-proxy.ts): the platform's
 *       floor, what any proxy on the runtime ours is built on pays before any code of its own.
 *   (r) the floor plus what the spec and the architecture require of a request with an API key
 *       (bare-proxy.ts with BENCH_LIMITER=1): the key's keyed hash, the one atomic limiter call in
 *       Redis, the X-RateLimit-* headers; (r) against (p) is the lowest CPU b/p a gateway that
 *       meets the spec can reach here.
 * b/p is ours against the usual build; b/d is what auth + both rate windows cost; d/c is our
 * proxy against nginx; at the fixed rate, b/f CPU is what the gateway's own code costs over the
 * floor and f/p CPU how far below the Express build the platform alone goes (so whether a CPU
 * ratio b/p is within reach of the platform at all, in the same run). Beside req/s and latency
 * at saturation, the CPU time each proxy process
 * spent per request (from /proc), the CPU Redis spent per request at saturation (INFO cpu) — at
 * saturation and at a fixed offered --rate, where it depends least on what else the machine
 * runs — and a V8 CPU profile of every Node process, taken in a pass of its own after the
 * measured rounds (the profiler adds CPU to every request of a Node process, and nginx runs
 * without one). Then (a)–(d) and (p) one request at a time, timed in µs: the latency a hop
 * adds when nothing queues. --json FILE writes the summary for the capacity model.
 */
const CLI = {
  name: 'gateway bench',
  usage:
    'usage: pnpm bench gateway [--seconds 8] [--connections 50] [--rounds 3] [--workers 1] [--rate 1000] [--variant-node-options="…"] [--variant-entry path] [--skip a,c,d] [--profile-interval 1000] [--profile-rate N]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string', default: '1' },
    rate: { type: 'string', default: '1000' },
    json: { type: 'string', default: '' },
    'variant-node-options': { type: 'string', default: '' },
    'variant-entry': { type: 'string', default: '' },
    skip: { type: 'string', default: '' },
    'profile-interval': { type: 'string', default: '1000' },
    'profile-rate': { type: 'string', default: '' },
  }),
);
const num = (name: keyof typeof opts): number => wholeNumberOption(CLI, opts, name);
const seconds = num('seconds');
const connections = num('connections');
const rounds = num('rounds');
const workers = num('workers');
const rate = num('rate');
/**
 * The profiling pass's sampling interval (µs). V8's default (1,000) leaves a few samples per
 * function at a few µs a request; 100 attributes each µs of a request (and adds CPU to it).
 */
const profileInterval = num('profile-interval');
/** The profiling pass's offered rate (req/s; none: saturated), e.g. --rate's to see what it costs there. */
const profileRate = opts['profile-rate'] === '' ? undefined : num('profile-rate');
/**
 * Scenarios left out (of a, c, d: those no target reads), so that a run of the same length gives
 * the target's rows more rounds.
 */
const skipped = new Set(opts.skip.split(',').filter(Boolean));
for (const id of skipped)
  if (!['a', 'c', 'd'].includes(id)) {
    console.error(`${CLI.usage}\n--skip takes a, c and d only (the targets read b, p, f and r)`);
    process.exit(2);
  }
/** Node options of a variant of (b) measured beside it (none: no variant). */
const variantNodeOptions = opts['variant-node-options'];
/**
 * Another build of the gateway run as (v), from the repository's root (a copy of `dist/` made
 * before a change, say `services/api-gateway/dist-before/main.js`): an A/B of code in the same
 * rounds, which two runs cannot give on a machine whose speed moves between them.
 */
const variantEntry = opts['variant-entry'];

const OUT = path.join(ROOT, 'bench-results');
const PROFILES = path.join(OUT, 'gateway-profile');
const CLOCK_TICKS = 100; // USER_HZ on Linux

/** User + system CPU seconds in a /proc stat line. */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds (user + system) of a process and all its descendants, from /proc. */
function cpuSeconds(pid: number): number {
  return cpuSplit(pid).total;
}

/**
 * CPU seconds of a process and its descendants, and of their main threads alone: the rest is
 * V8's threads (parallel and concurrent GC, concurrent compilation) and libuv's, which a CPU
 * profile (the main thread's) does not see.
 */
function cpuSplit(pid: number): { total: number; main: number } {
  let total = 0;
  let main = 0;
  const visit = (p: number) => {
    try {
      total += statCpuSeconds(readFileSync(`/proc/${p}/stat`, 'utf8'));
      main += statCpuSeconds(readFileSync(`/proc/${p}/task/${p}/stat`, 'utf8'));
      for (const task of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim();
        for (const c of children ? children.split(' ') : []) visit(Number(c));
      }
    } catch {
      // The process ended between reads: it no longer adds anything.
    }
  };
  visit(pid);
  return { total, main };
}

interface Scenario {
  id: 'a' | 'b' | 'c' | 'd' | 'p' | 'f' | 'r' | 'v';
  name: string;
  url: string;
  /** Made per measurement: a direct call's internal token lives a minute at most. */
  headers: () => Record<string, string>;
  /** The process whose CPU time per request is reported (the proxy; signals for (a)). */
  pid: number;
}

interface Row extends LoadResult {
  proxyCpuUs: number;
  signalsCpuUs: number;
  /** Redis's CPU per request at saturation: the limiter's script, and the read index's reads. */
  redisCpuUs: number;
  /** The proxy's CPU per request at the fixed --rate. */
  proxyCpuAtRateUs: number;
  /** The part of it on the proxy's main thread (the rest: V8's GC and compiler threads, libuv's). */
  proxyMainCpuAtRateUs: number;
  /**
   * Rounds whose paced run served less than 90 % of --rate (a proxy that stalled): their CPU is
   * not at the rate, so the median leaves them out (the Express build's proxy stalls now and
   * then: http-proxy keeps an upstream socket for every request its client abandoned).
   */
  roundsOffRate: number;
  /**
   * Rounds whose saturated run served less than --rate, the load the same proxy is paced at: a
   * stall (as above), left out of the saturated medians, so a round of 0 req/s is not a median.
   */
  roundsStalled: number;
}

/** A paced run that served at least this share of --rate is at the rate. */
const AT_RATE = 0.9;

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/**
 * The CPU seconds Redis reports for itself (INFO cpu: user + system, every thread). Redis shares
 * the 2 cores with everything else here, so what it spends per request is throughput the proxies
 * do not get — a cost a deployment with Redis on other machines would not pay on the gateway's.
 */
async function redisCpuSeconds(redis: RedisClient): Promise<number> {
  // On a Cluster, every master's: what the whole cluster spent.
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let total = 0;
  for (const server of servers) {
    const info = await server.info('cpu');
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
    total += field('used_cpu_sys') + field('used_cpu_user');
  }
  return total;
}

async function measure(s: Scenario, signalsPid: number, redis: RedisClient, path: string): Promise<Row> {
  const proxyBefore = cpuSeconds(s.pid);
  const signalsBefore = cpuSeconds(signalsPid);
  const redisBefore = await redisCpuSeconds(redis);
  const r = await load(s.name, `${s.url}${path}`, s.headers(), seconds, connections);
  const requests = Math.max(1, r.rps * seconds);
  const proxyCpuUs = ((cpuSeconds(s.pid) - proxyBefore) / requests) * 1e6;
  const signalsCpuUs = ((cpuSeconds(signalsPid) - signalsBefore) / requests) * 1e6;
  const redisCpuUs = (((await redisCpuSeconds(redis)) - redisBefore) / requests) * 1e6;
  const atRateBefore = cpuSplit(s.pid);
  const paced = await load(s.name, `${s.url}${path}`, s.headers(), seconds, connections, rate);
  const pacedRequests = Math.max(1, paced.rps * seconds);
  const atRateAfter = cpuSplit(s.pid);
  return {
    ...r,
    proxyCpuUs,
    signalsCpuUs,
    redisCpuUs,
    proxyCpuAtRateUs: ((atRateAfter.total - atRateBefore.total) / pacedRequests) * 1e6,
    proxyMainCpuAtRateUs: ((atRateAfter.main - atRateBefore.main) / pacedRequests) * 1e6,
    roundsOffRate: paced.rps < AT_RATE * rate ? 1 : 0,
    roundsStalled: r.rps < rate ? 1 : 0,
  };
}

/**
 * What a hop adds to one request when nothing queues: `count` requests one at a time on one
 * keep-alive connection, timed in µs (autocannon's latencies are whole milliseconds, and at
 * saturation p99 is mostly the queue, which throughput already measures).
 */
async function unloadedLatency(
  url: string,
  headers: Record<string, string>,
  count: number,
): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ connections: 1 });
  const micros: number[] = [];
  try {
    for (let n = 0; n < count + 100; n++) {
      const started = process.hrtime.bigint();
      const response = await request(url, { headers, dispatcher: agent });
      await response.body.dump();
      if (n >= 100) micros.push(Number(process.hrtime.bigint() - started) / 1000);
    }
  } finally {
    await agent.close();
  }
  micros.sort((x, y) => x - y);
  return { p50: micros[Math.floor(count * 0.5)]!, p99: micros[Math.floor(count * 0.99)]! };
}

function printTable(rows: Row[]): void {
  console.log(
    `${'scenario'.padEnd(44)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'errors'.padStart(6)} ${'non2xx'.padStart(7)} ${'proxy µs/req'.padStart(12)} ${'signals µs/req'.padStart(14)} ${'redis µs/req'.padStart(12)} ${`proxy µs/req @${rate}/s`.padStart(20)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(44)} ${r.rps.toFixed(0).padStart(7)} ${r.p50.toFixed(2).padStart(7)} ${r.p99.toFixed(2).padStart(7)} ${String(r.errors).padStart(6)} ${String(r.non2xx).padStart(7)} ${r.proxyCpuUs.toFixed(0).padStart(12)} ${r.signalsCpuUs.toFixed(0).padStart(14)} ${r.redisCpuUs.toFixed(0).padStart(12)} ${r.proxyCpuAtRateUs.toFixed(0).padStart(20)}`,
    );
  }
}

async function startNginx(signalsPort: number, port: number): Promise<ChildProcess | undefined> {
  const bin = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
  if (!bin) return undefined;
  const conf = path.join(OUT, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes ${workers}; daemon off; pid ${OUT}/nginx.pid; error_log ${OUT}/nginx-error.log;
events { worker_connections 1024; }
http { access_log off; upstream up { server 127.0.0.1:${signalsPort}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } } }\n`,
  );
  const nginx = spawn(bin, ['-c', conf], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return nginx;
    await new Promise((r) => setTimeout(r, 100));
  }
  nginx.kill('SIGTERM');
  return undefined;
}

async function seedSignal(signalsUrl: string): Promise<string> {
  const created = await request(`${signalsUrl}/internal/signals`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      token: {
        symbol: 'BENCH',
        name: 'Bench Token',
        contract: 'So1anaBenchContract0001pump',
        age_hours: 2,
        dex_paid: true,
      },
      metrics: { mcap_entry: 100000, volume_24h: 5000, holders: 100, liquidity: 9000 },
      type: 'new',
    }),
  });
  const body = (await created.body.json()) as { data?: { id?: string } };
  if (!body.data?.id) throw new Error(`seeding a signal failed: ${JSON.stringify(body)}`);
  return body.data.id;
}

/** Drops the run's keys (on the run's own Redis connection), databases and broker names. */
async function main() {
  mkdirSync(OUT, { recursive: true });
  rmSync(PROFILES, { recursive: true, force: true });
  const db = `bench_gw_${Date.now()}`;
  const profile = (name: string) => [
    '--cpu-prof',
    `--cpu-prof-dir=${path.join(PROFILES, name)}`,
    `--cpu-prof-interval=${profileInterval}`,
  ];
  const started: Proc[] = [];
  let nginx: ChildProcess | undefined;
  const redis = benchRedis();
  /** Each profiled load's requests and window, by scenario id. */
  const loadedProfiles = new Map<string, Omit<LoadedProfile, 'file'>>();
  const summary: Array<{ route: string; rows: Array<Row & { id: string }>; ratios: Record<string, number> }> =
    [];
  try {
    const signalsEnv = { SIGNALS_DB: `${db}_signals`, AMQP_PREFIX: `${db}.`, REDIS_PREFIX: `${db}:` };
    const signals = await startService('services/signals/dist/main.js', 4101, signalsEnv);
    started.push(signals);
    const id = await seedSignal(signals.url);
    const { accountId, key } = benchApiKey(`${db}_gateway`, `${db}:`, `${db}@bench.local`);
    const gatewayEnv = {
      GATEWAY_DB: `${db}_gateway`,
      REDIS_PREFIX: `${db}:`,
      SIGNALS_URL: signals.url,
      STATS_URL: signals.url,
      WEBHOOKS_URL: signals.url,
      GATEWAY_WORKERS: String(workers),
    };
    // The gateway scenarios: one process each, on its own port with its own settings.
    const gatewaySpecs: Array<{
      id: Scenario['id'];
      name: string;
      entry: string;
      port: number;
      env: Record<string, string>;
      /** Sends the bench's API key ((d) runs with auth off and sends none). */
      keyed: boolean;
      /** Node command-line options before the entry ((v)'s). */
      args?: string[];
      profile: string;
    }> = [
      {
        id: 'b',
        name: '(b) gateway (API key, limits, usage)',
        entry: 'services/api-gateway/dist/main.js',
        port: 4100,
        env: {},
        keyed: true,
        profile: 'b-gateway',
      },
      {
        id: 'd',
        name: '(d) gateway, auth + limits off',
        entry: 'infra/bench/dist/gateway-auth-off.js',
        port: 4103,
        env: { BENCH_ACCOUNT_ID: accountId },
        keyed: false,
        profile: 'd-gateway-auth-off',
      },
      {
        id: 'p',
        name: '(p) Express + express-rate-limit + proxy',
        entry: 'infra/bench/dist/express-gateway.js',
        port: 4104,
        env: { BENCH_PREFIX: `${db}:p:` },
        keyed: true,
        profile: 'p-express-gateway',
      },
      {
        id: 'f',
        name: '(f) bare node:http + undici proxy (floor)',
        entry: 'infra/bench/dist/bare-proxy.js',
        port: 4105,
        env: { BENCH_ACCOUNT_ID: accountId },
        keyed: false,
        profile: 'f-bare-proxy',
      },
      {
        id: 'r',
        name: '(r) floor + key hash, limiter call, X-RateLimit-*',
        entry: 'infra/bench/dist/bare-proxy.js',
        port: 4107,
        env: {
          BENCH_ACCOUNT_ID: accountId,
          BENCH_API_KEY: key,
          BENCH_LIMITER: '1',
          REDIS_PREFIX: `${db}:r:`,
        },
        keyed: true,
        profile: 'r-floor-limiter',
      },
      // (v): (b) with other Node options, measured in the same rounds (an A/B of a runtime setting).
      ...(variantNodeOptions || variantEntry
        ? [
            {
              id: 'v' as const,
              name: [
                '(v) gateway as (b),',
                variantEntry ? `from ${variantEntry}` : '',
                variantNodeOptions ? `node ${variantNodeOptions}` : '',
              ]
                .filter(Boolean)
                .join(' '),
              entry: variantEntry || 'services/api-gateway/dist/main.js',
              port: 4106,
              env: {},
              // On node's command line, over (b)'s NODE_OPTIONS: V8 flags NODE_OPTIONS refuses work too.
              args: variantNodeOptions.split(/\s+/).filter(Boolean),
              keyed: true,
              profile: 'v-gateway-variant',
            },
          ]
        : []),
    ];
    // (p) finds the bench's key by its hash, with the plan the bench account has.
    await redis.set(
      `${db}:p:pkey:${createHash('sha256').update(key).digest('hex')}`,
      JSON.stringify({ accountId, perMinute: 1_000_000_000, perDay: 1_000_000_000 }),
    );
    // Measured without the CPU profiler (it adds CPU to every request of a Node process, and
    // nginx runs without one); profiled afterwards in a pass of their own.
    const gateways = (nodeArgs: (name: string) => string[]) =>
      gatewaySpecs.map((g) =>
        startService(g.entry, g.port, { ...gatewayEnv, ...g.env }, [
          ...(g.args ?? []),
          ...nodeArgs(g.profile),
        ]),
      );
    for (let i = gatewaySpecs.length - 1; i >= 0; i--)
      if (skipped.has(gatewaySpecs[i]!.id)) gatewaySpecs.splice(i, 1);
    const running = await Promise.all(gateways(() => []));
    started.push(...running);
    if (!skipped.has('c')) nginx = await startNginx(4101, 4102);

    const direct = () => ({ authorization: `Bearer ${benchInternalToken('signals', accountId)}` });
    const withKey = () => ({ authorization: `Bearer ${key}` });
    const [gatewayB, ...otherGateways] = gatewaySpecs.map((g, i): Scenario => ({
      id: g.id,
      name: g.name,
      url: running[i]!.url,
      headers: g.keyed ? withKey : () => ({}),
      pid: running[i]!.child.pid!,
    }));
    const scenarios: Scenario[] = [
      ...(skipped.has('a')
        ? []
        : [
            {
              id: 'a' as const,
              name: '(a) signals directly',
              url: signals.url,
              headers: direct,
              pid: signals.child.pid!,
            },
          ]),
      gatewayB!,
      ...(nginx
        ? [
            {
              id: 'c' as const,
              name: '(c) nginx (proxy only)',
              url: 'http://127.0.0.1:4102',
              headers: direct,
              pid: nginx.pid!,
            },
          ]
        : []),
      ...otherGateways,
    ];
    if (!nginx && !skipped.has('c'))
      console.log('nginx not installed (apt-get install nginx-light): (c) skipped');

    // Two routes: a real read (the detail, from the signals read index) and one the service
    // serves without any store call (a malformed id → 404): the HTTP path the proxies add to.
    const routes: Array<[string, string]> = [
      ['GET /v1/signals/{id} (read)', fillPath(ROUTES.getSignal.path, { signal_id: id })],
      ['GET /v1/signals/sig_0 (404, no store call)', fillPath(ROUTES.getSignal.path, { signal_id: 'sig_0' })],
    ];
    console.log(
      `load average at start: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (2 cores shared by the load generator, every server and other work)`,
    );
    for (const [label, route] of routes) {
      for (const s of scenarios) await load('warm-up', `${s.url}${route}`, s.headers(), 2, connections);
      const samples = new Map<string, Row[]>(scenarios.map((s) => [s.id, []]));
      for (let r = 0; r < rounds; r++) {
        for (const s of scenarios)
          samples.get(s.id)!.push(await measure(s, signals.child.pid!, redis, route));
      }
      const rows = scenarios.map((s): Row => {
        const runs = samples.get(s.id)!;
        // No saturated round left: NaN, which the ratios print as void.
        const served = runs.filter((x) => !x.roundsStalled);
        const atSaturation = (of: (x: Row) => number) => (served.length ? median(served.map(of)) : NaN);
        return {
          name: s.name,
          rps: atSaturation((x) => x.rps),
          p50: atSaturation((x) => x.p50),
          p99: atSaturation((x) => x.p99),
          errors: runs.reduce((n, x) => n + x.errors, 0),
          non2xx: runs.reduce((n, x) => n + x.non2xx, 0),
          proxyCpuUs: atSaturation((x) => x.proxyCpuUs),
          signalsCpuUs: atSaturation((x) => x.signalsCpuUs),
          redisCpuUs: atSaturation((x) => x.redisCpuUs),
          proxyCpuAtRateUs: median(runs.filter((x) => !x.roundsOffRate).map((x) => x.proxyCpuAtRateUs)),
          proxyMainCpuAtRateUs: median(
            runs.filter((x) => !x.roundsOffRate).map((x) => x.proxyMainCpuAtRateUs),
          ),
          roundsOffRate: runs.reduce((n, x) => n + x.roundsOffRate, 0),
          roundsStalled: rounds - served.length,
        };
      });
      console.log(
        `\n${label} — ${rounds} rounds × ${seconds}s per scenario (medians), ${connections} connections, ${workers} proxy worker(s)\n`,
      );
      printTable(rows);
      for (const r of rows)
        if (r.roundsOffRate)
          console.log(
            `${r.name}: ${r.roundsOffRate} of ${rounds} paced rounds served under ${AT_RATE * 100} % of ${rate}/s (stalled): left out of its CPU at ${rate}/s${r.roundsOffRate === rounds ? ' (none left: no figure)' : ''}`,
          );
      for (const r of rows)
        if (r.roundsStalled)
          console.log(
            `${r.name}: ${r.roundsStalled} of ${rounds} saturated rounds served under ${rate}/s (stalled): left out of its saturated figures${r.roundsStalled === rounds ? ' (none left: void)' : ''}`,
          );
      const by = (id: Scenario['id']) => rows[scenarios.findIndex((s) => s.id === id)];
      const [a, b, c, d, p, f] = [by('a'), by('b')!, by('c'), by('d'), by('p')!, by('f')!];
      // A skipped scenario's ratios read n/a.
      const ratio = (x: Row | undefined, y: Row | undefined) =>
        x && y ? (Number.isFinite(x.rps / y.rps) ? (x.rps / y.rps).toFixed(2) : 'void') : 'n/a';
      const ms = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)} ms`;
      console.log(
        `b/p ${ratio(b, p)} (target ≥ 1.50), p99 b ${b.p99.toFixed(2)} ms against p ${p.p99.toFixed(2)} ms (target: no higher); CPU per request at ${rate}/s: b ${b.proxyCpuAtRateUs.toFixed(0)} µs, p ${p.proxyCpuAtRateUs.toFixed(0)} µs`,
      );
      if (d)
        console.log(
          `b/d ${ratio(b, d)} (target ≥ 0.80), p99 b−d ${ms(b.p99 - d.p99)}; auth + limits cost ${(b.proxyCpuAtRateUs - d.proxyCpuAtRateUs).toFixed(0)} µs CPU per request at ${rate}/s (${(b.proxyCpuUs - d.proxyCpuUs).toFixed(0)} at saturation) and Redis ${(b.redisCpuUs - d.redisCpuUs).toFixed(0)} µs at saturation, on the same 2 cores`,
        );
      if (c && d)
        console.log(
          `d/c ${ratio(d, c)}; b/c ${ratio(b, c)}, p99 b−c ${ms(b.p99 - c.p99)}; b/a ${ratio(b, a)}`,
        );
      else console.log(`b/a ${ratio(b, a)}`);
      const cpu = (x: Row | undefined, y: Row | undefined) =>
        x && y ? (x.proxyCpuAtRateUs / y.proxyCpuAtRateUs).toFixed(2) : 'n/a';
      console.log(
        `CPU per request at ${rate}/s against the floor (f) ${f.proxyCpuAtRateUs.toFixed(0)} µs: b/p ${cpu(b, p)} (target ≤ 0.50), b/f ${cpu(b, f)}, d/f ${cpu(d, f)}, f/p ${cpu(f, p)} (the lowest b/p the platform allows)`,
      );
      const lim = by('r')!;
      console.log(
        `the spec's minimum on the floor (r) ${lim.proxyCpuAtRateUs.toFixed(0)} µs: r/p ${cpu(lim, p)} (the lowest b/p a gateway that meets the spec allows: key hash, one limiter call, rate headers), r/f ${cpu(lim, f)}, b/r ${cpu(b, lim)} (the rest of ours over it)`,
      );
      const threads = (x: Row | undefined) =>
        x
          ? `${x.proxyMainCpuAtRateUs.toFixed(0)} + ${(x.proxyCpuAtRateUs - x.proxyMainCpuAtRateUs).toFixed(0)}`
          : 'n/a';
      console.log(
        `CPU per request at ${rate}/s, main thread + the rest (V8's GC and compiler threads, libuv's): b ${threads(b)}, p ${threads(p)}, f ${threads(f)}, r ${threads(lim)} µs`,
      );
      const v = by('v');
      if (v)
        console.log(
          `variant (v) ${[variantEntry, variantNodeOptions].filter(Boolean).join(' ')}: ${v.rps.toFixed(0)} req/s (v/b ${ratio(v, b)}, v/p ${ratio(v, p)}), CPU per request at ${rate}/s ${v.proxyCpuAtRateUs.toFixed(0)} µs: v/b ${cpu(v, b)}, v/p ${cpu(v, p)}`,
        );
      summary.push({
        route: label,
        rows: rows.map((r, i) => ({ id: scenarios[i]!.id, ...r })),
        ratios: {
          'b/p': b.rps / p.rps,
          ...(d ? { 'b/d': b.rps / d.rps } : {}),
          'cpu b/p': b.proxyCpuAtRateUs / p.proxyCpuAtRateUs,
          'cpu b/f': b.proxyCpuAtRateUs / f.proxyCpuAtRateUs,
          'cpu f/p': f.proxyCpuAtRateUs / p.proxyCpuAtRateUs,
          'cpu r/p': lim.proxyCpuAtRateUs / p.proxyCpuAtRateUs,
          'cpu b/r': b.proxyCpuAtRateUs / lim.proxyCpuAtRateUs,
          ...(c && d ? { 'd/c': d.rps / c.rps, 'b/c': b.rps / c.rps } : {}),
        },
      });
      // One request at a time through each, interleaved, medians of three 1,000-request runs.
      const probed = scenarios.filter((s) => s.id !== 'c' || nginx);
      const latencies = new Map<string, Array<{ p50: number; p99: number }>>(probed.map((s) => [s.id, []]));
      for (let r = 0; r < 3; r++)
        for (const s of probed)
          latencies.get(s.id)!.push(await unloadedLatency(`${s.url}${route}`, s.headers(), 1000));
      const unloaded = (id: string) => {
        const runs = latencies.get(id);
        return runs
          ? { p50: median(runs.map((x) => x.p50)), p99: median(runs.map((x) => x.p99)) }
          : undefined;
      };
      const [ua, ub, uc, ud, up, uf] = ['a', 'b', 'c', 'd', 'p', 'f'].map(unloaded);
      const us = (x: { p50: number; p99: number } | undefined) =>
        x ? `${x.p50.toFixed(0)} / ${x.p99.toFixed(0)} µs` : 'skipped';
      console.log(
        `one request at a time, p50 / p99: (a) ${us(ua)}, (b) ${us(ub)}, (c) ${us(uc)}, (d) ${us(ud)}, (p) ${us(up)}, (f) ${us(uf)}; auth + limits add ${ub && ud ? `${(ub.p50 - ud.p50).toFixed(0)} µs at p50, ${(ub.p99 - ud.p99).toFixed(0)} µs at p99` : 'n/a'} (target ≤ +1 ms)`,
      );
    }

    // The profiling pass: the signals service and each gateway again, under the profiler, one
    // saturated run of the read route each (the profiles are written as the processes exit).
    for (const p of started.splice(0)) await p.stop();
    const profiledSignals = await startService(
      'services/signals/dist/main.js',
      4101,
      signalsEnv,
      profile('a-signals'),
    );
    started.push(profiledSignals, ...(await Promise.all(gateways(profile))));
    for (const s of scenarios.filter((x) => x.id !== 'c')) {
      const fromUs = Number(process.hrtime.bigint() / 1000n);
      const profiled = await load(
        `${s.name} (profiled)`,
        `${s.url}${routes[0]![1]}`,
        s.headers(),
        seconds,
        connections,
        profileRate,
      );
      // The profile's samples over this count are its µs per request (at the sampling interval).
      const requests = Math.round(profiled.rps * seconds);
      console.log(`profiled (${s.id}): ${requests} requests`);
      loadedProfiles.set(s.id, { requests, fromUs, toUs: Number(process.hrtime.bigint() / 1000n) });
    }
    if (opts.json)
      writeFileSync(
        opts.json,
        `${JSON.stringify({ bench: 'gateway', at: new Date().toISOString(), seconds, rounds, connections, routes: summary }, null, 2)}\n`,
      );
    console.log(
      `\nload average at end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    nginx?.kill('SIGTERM');
    for (const p of started.reverse()) await p.stop();
    await dropBenchData(db, redis, [`${db}_signals`, `${db}_gateway`]);
    redis.disconnect();
  }
  const profileFiles = new Map<string, string>();
  for (const name of readdirSync(PROFILES).sort()) {
    const file = readdirSync(path.join(PROFILES, name)).find((f) => f.endsWith('.cpuprofile'));
    if (file) {
      profileFiles.set(name.slice(0, 1), path.join(PROFILES, name, file));
      console.log(`\n${name}: ${summarize(path.join(PROFILES, name, file))}`);
      console.log(`(profile: bench-results/gateway-profile/${name}/${file})`);
    }
  }
  // What ours costs beyond the spec's minimum, function by function, in the profiled loads.
  const loaded = (id: string): LoadedProfile | undefined => {
    const file = profileFiles.get(id);
    const window = loadedProfiles.get(id);
    return file && window ? { file, ...window } : undefined;
  };
  const [ours, minimum] = [loaded('b'), loaded('r')];
  if (ours && minimum)
    console.log(
      `\n(b) against (r), ${profileRate ? `at ${profileRate}/s` : 'saturated'}: ${comparePerRequest(ours, minimum, 30)}`,
    );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
