import { ROUTES, fillPath } from '@signal/contracts';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { connect, type ConfirmChannel } from 'amqplib';
import mongoose from 'mongoose';
import { newId, exitWithUsage, numberOption, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { signalSnapshotFixture } from '@signal/test-kit';
import { Pool } from 'undici';
import { summarize } from './cpu-profile';
import {
  benchInternalToken,
  cpuBetween,
  cpuByGroup,
  dropBrokerPrefix,
  infra,
  machineGroups,
  percentile,
  ROOT,
  startService,
  wholeNumberOption,
  type CpuGroups,
  type Proc,
} from './harness';

/**
 * pnpm bench webhooks [--scenario all|steady|fanout|retries] [--rate 100] [--seconds 10]
 *   [--subscribers 10] [--failing 0] [--cpu-prof] [--warmup 2] [--fanout-subscribers 1000] [--retry-deliveries 100000]
 *   [--retry-subscribers 20] [--retry-rate 30] [--max-delay 900] [--other-work 0] [--floor]
 *
 * Three scenarios, each against a fresh webhooks API + worker (own database, own queues):
 *  steady  — --rate events/s for --seconds to --subscribers receivers, after --warmup seconds
 *            at the same rate that are delivered and counted in the ledger but not in the
 *            figures (a fresh worker's first second — cold connections, JIT, new collections —
 *            is not what a running one sustains; the warm-up's own figures are printed too);
 *            --failing P: P % of the receivers answer 500 and a fifth as many (at least one when
 *            P > 0) take 4 s to answer 200, the mix a real fleet has; the direct baseline meets
 *            the same receivers, and the worker may give a subscription as many attempts in
 *            flight as the baseline has connections per receiver; --other-work P: a process of
 *            other work beside the whole scenario (direct baseline included), busy P ms of every
 *            100 ms on one core, the machine shared as in production. Delivered = first attempts completed (any response), per second
 *            of the offered window; backlog = (event, subscriber) pairs offered and not yet
 *            attempted, sampled every second; commit → first byte = publish to the receiver's
 *            first byte of the attempt. One summary line; --floor: then as many events to the
 *            same receivers at the same rate through the platform's floor (webhook-floor.ts:
 *            durable jobs, a delivery and a log entry stored per attempt, nothing of the
 *            service's own), and through the same floor writing the service's documents to its
 *            collections (FLOOR_STORE=service), each with its ratio to direct and its CPU per
 *            first attempt beside ours; --floor-without claim,log-index: that second floor
 *            without those pieces of the service's data model (what each costs; the log index
 *            is already gone where the store's wrapper lists ids by prefix);
 *  fanout  — one event to --fanout-subscribers subscriptions (target: all within 3 s);
 *  retries — --retry-deliveries deliveries whose first attempt gets a 503 with a
 *            Retry-After drawn from 1 s … --max-delay s (the delays are the receivers', so the
 *            bench shortens them only through --max-delay, and says so); measures how late each
 *            retry fires after its due time (target p99 ≤ 1 s).
 * --cpu-prof: the worker runs under V8's CPU profiler; its profile (bench-results/webhooks-worker-profile)
 * is summarized by function and package after each scenario.
 * Each prints deliveries/s and event→delivery p50/p99 beside direct POSTs (undici) to the same
 * receivers in the same run, and checks its ledger: events × matching subscriptions must equal
 * succeeded + failed + pending as the public API reports them, and every delivery recorded as
 * succeeded must have had a 2xx response from a receiver; otherwise the run is void (exit 1).
 */
const CLI = {
  name: 'webhooks bench',
  usage:
    'usage: pnpm bench webhooks [--scenario all|steady|fanout|retries] [--rate 100] [--seconds 10] [--subscribers 10] [--failing 0] [--cpu-prof] [--warmup 2] [--fanout-subscribers 1000] [--retry-deliveries 100000] [--retry-subscribers 20] [--retry-rate 30] [--max-delay 900] [--other-work 0] [--floor] [--floor-without claim,log-index]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    scenario: { type: 'string', default: 'all' },
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '10' },
    subscribers: { type: 'string', default: '10' },
    failing: { type: 'string', default: '0' },
    'cpu-prof': { type: 'boolean', default: false },
    warmup: { type: 'string', default: '2' },
    'fanout-subscribers': { type: 'string', default: '1000' },
    'retry-deliveries': { type: 'string', default: '100000' },
    'retry-subscribers': { type: 'string', default: '20' },
    'retry-rate': { type: 'string', default: '30' },
    'max-delay': { type: 'string', default: '900' },
    'other-work': { type: 'string', default: '0' },
    floor: { type: 'boolean', default: false },
    'floor-without': { type: 'string', default: '' },
  }),
);
const num = (name: keyof typeof opts): number => wholeNumberOption(CLI, opts, name);
const SCENARIOS = ['steady', 'fanout', 'retries'] as const;
type ScenarioName = (typeof SCENARIOS)[number];
const chosen: readonly ScenarioName[] =
  opts.scenario === 'all' ? SCENARIOS : SCENARIOS.filter((s) => s === opts.scenario);
if (chosen.length === 0) exitWithUsage(CLI, `--scenario must be all, ${SCENARIOS.join(', ')}`);
const FLOOR_PIECES = ['claim', 'log-index'];
if (
  opts['floor-without'] !== '' &&
  (!opts.floor || opts['floor-without'].split(',').some((piece) => !FLOOR_PIECES.includes(piece)))
)
  exitWithUsage(CLI, '--floor-without takes claim, log-index or both (comma-separated), with --floor');

// ---------------------------------------------------------------------------------------------
// Receivers: R servers on loopback; subscriber i is path /s<i> on server i % R. Every request is
// keyed by (event, subscriber); a behaviour decides the response.

interface ReceiverResponse {
  status: number;
  headers?: Record<string, string>;
}
type Behaviour = (key: string, seenBefore: number) => ReceiverResponse;

interface Receivers {
  urls: string[];
  /** Receipt times (the request's first byte) per `${eventKey}|${path}`. */
  seen: Map<string, number[]>;
  /** When each pair's first attempt got its response (any status). */
  completed: Map<string, number>;
  /** Pairs that got a 2xx response (at least once). */
  succeeded: Set<string>;
  /** Per pair: when the failing response went out and the Retry-After it carried (ms). */
  dueAt: Map<string, number>;
  close(): Promise<void>;
}

/**
 * The receivers' own behaviour by path, for the system and the direct baseline alike: the first
 * `failing` subscribers answer 500, the next `slow` take SLOW_RECEIVER_MS to answer.
 */
interface Fleet {
  failing: number;
  slow: number;
}
const SLOW_RECEIVER_MS = 4000;
const HEALTHY: Fleet = { failing: 0, slow: 0 };

async function startReceivers(
  subscribers: number,
  behaviour: Behaviour,
  fleet: Fleet = HEALTHY,
): Promise<Receivers> {
  const servers: Server[] = [];
  const seen = new Map<string, number[]>();
  const completed = new Map<string, number>();
  const succeeded = new Set<string>();
  const dueAt = new Map<string, number>();
  const serverCount = Math.min(subscribers, 50);
  for (let i = 0; i < serverCount; i++) {
    const server = createServer((req, res) => {
      const firstByte = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = firstByte;
        const header = req.headers['x-bench-event'];
        const eventKey =
          typeof header === 'string'
            ? header
            : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { id: string } }).data.id;
        const key = `${eventKey}|${req.url ?? ''}`;
        const list = seen.get(key) ?? [];
        list.push(at);
        seen.set(key, list);
        const subscriber = Number(/^\/s(\d+)/.exec(req.url ?? '')?.[1] ?? -1);
        const failing = subscriber >= 0 && subscriber < fleet.failing;
        const slow = subscriber >= fleet.failing && subscriber < fleet.failing + fleet.slow;
        const response = failing
          ? { status: 500 }
          : typeof header === 'string'
            ? { status: 200 }
            : behaviour(key, list.length - 1);
        const respond = () => {
          if (response.status >= 200 && response.status < 300) succeeded.add(key);
          const retryAfter = response.headers?.['retry-after'];
          if (retryAfter !== undefined) dueAt.set(key, at + Number(retryAfter) * 1000);
          if (!completed.has(key)) completed.set(key, Date.now());
          res.writeHead(response.status, response.headers).end();
        };
        if (slow) setTimeout(respond, SLOW_RECEIVER_MS);
        else respond();
      });
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
  }
  const urls = Array.from({ length: subscribers }, (_, i) => {
    const { port } = servers[i % serverCount]!.address() as AddressInfo;
    return `http://127.0.0.1:${port}/s${i}`;
  });
  return {
    urls,
    seen,
    completed,
    succeeded,
    dueAt,
    close: async () => {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One webhooks stack (API + worker) per scenario, with its own database and broker names.

interface Stack {
  api: Proc;
  exchange: string;
  channel: ConfirmChannel;
  subscribe(urls: string[]): Promise<string[]>;
  /** Totals per status over the given subscriptions, through the public API. */
  ledger(ids: string[]): Promise<{ succeeded: number; failed: number; pending: number }>;
  /** The worker's process id, for its CPU time. */
  workerPid: number | undefined;
  /**
   * The worker's `webhook_attempts_total` by outcome, `webhook_deferrals_total` by reason and
   * `store_writes_already_held_total` by collection.
   */
  attemptsByOutcome(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/** The worker's metrics port in the bench (the API is on 4501, the worker's health on 4502). */
const WORKER_METRICS_PORT = 4503;

const BENCH_ACCOUNT = 'acc_bench';
const WORKER_PROFILES = path.join(ROOT, 'bench-results', 'webhooks-worker-profile');
const auth = () => ({
  authorization: `Bearer ${benchInternalToken('webhooks', BENCH_ACCOUNT)}`,
});

async function startStack(label: string, env: Record<string, string>): Promise<Stack> {
  const db = `bench_webhooks_${label}_${Date.now()}`;
  const prefix = `${db}.`;
  const fullEnv = {
    WEBHOOKS_DB: db,
    AMQP_PREFIX: prefix,
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '50',
    // The fan-out scenario subscribes one account a thousand times.
    WEBHOOKS_MAX_PER_ACCOUNT: '100000',
    // The ledger's lists (three per subscription, each over its history) are the bench's
    // instrument, not load the API should pace: a burst as long as the run's reads.
    WEBHOOK_LIST_READ_BURST_MS: '600000',
    AMQP_QUEUE_TYPE: 'classic',
    ...env,
    // The worker's bounds from the bench's own environment (WEBHOOK_*=… pnpm bench webhooks), to
    // show which one sets a run's throughput.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        (e): e is [string, string] => e[0].startsWith('WEBHOOK_') && e[1] !== undefined,
      ),
    ),
  };
  const api = await startService('services/webhooks/dist/main.js', 4501, fullEnv);
  const worker = await startService(
    'services/webhooks/dist/worker.js',
    4502,
    { ...fullEnv, WORKER_METRICS_PORT: String(WORKER_METRICS_PORT) },
    opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${WORKER_PROFILES}`] : [],
  );
  const conn = await connect(infra().AMQP_URL);
  const channel = await conn.createConfirmChannel();
  const exchange = `${prefix}signal.events`;
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const pool = new Pool(api.url, { connections: 16 });
  type Answer = { data: { id: string }; meta?: { total: number } };
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> => {
    const res = await pool.request({
      method,
      path,
      headers: { ...auth(), 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    // Paced (a burst the run outgrew): wait as told, as a client does, and ask again.
    const retryAfterS = Number(res.headers['retry-after']);
    if (res.statusCode === 429 && retryAfterS > 0) {
      await new Promise((resolve) => setTimeout(resolve, retryAfterS * 1000));
      return call(method, path, body);
    }
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text) as Answer;
  };
  return {
    api,
    exchange,
    channel,
    async subscribe(urls) {
      const ids: string[] = new Array<string>(urls.length);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < urls.length; i = next++) {
            ids[i] = (
              await call('POST', ROUTES.createWebhook.path, { url: urls[i], events: ['signal.new'] })
            ).data.id;
          }
        }),
      );
      return ids;
    },
    async ledger(ids) {
      const totals = { succeeded: 0, failed: 0, pending: 0 };
      // One list at a time: a list by status reads the subscription's history, and the API
      // serves an account one such read at a time (429 to a second one meanwhile).
      for (const status of ['succeeded', 'failed', 'pending'] as const)
        for (const id of ids) {
          const page = await call(
            'GET',
            `${fillPath(ROUTES.listWebhookDeliveries.path, { webhook_id: id })}?status=${status}&limit=1`,
          );
          totals[status] += page.meta?.total ?? 0;
        }
      return totals;
    },
    workerPid: worker.child.pid,
    async attemptsByOutcome() {
      const res = await fetch(`http://127.0.0.1:${WORKER_METRICS_PORT}/metrics`);
      const counts: Record<string, number> = {};
      const text = await res.text();
      for (const m of text.matchAll(/^webhook_attempts_total\{outcome="([a-z_]+)"\} (\d+)/gm))
        counts[m[1]!] = Number(m[2]);
      for (const m of text.matchAll(/^webhook_deferrals_total\{reason="([a-z_]+)"\} (\d+)/gm))
        counts[`deferred: ${m[1]!}`] = Number(m[2]);
      // A document a batched insert found stored costs FerretDB its whole batch one by one.
      for (const m of text.matchAll(/^store_writes_already_held_total\{collection="([a-z_]+)"\} (\d+)/gm))
        counts[`held already: ${m[1]!}`] = Number(m[2]);
      return counts;
    },
    async stop() {
      await pool.close();
      await conn.close().catch(() => undefined);
      await worker.stop();
      await api.stop();
      if (opts['cpu-prof'])
        for (const file of readdirSync(WORKER_PROFILES).filter((f) => f.endsWith('.cpuprofile')))
          console.log(`worker CPU profile (${label}):\n${summarize(path.join(WORKER_PROFILES, file))}`);
      const m = await mongoose.createConnection(infra().MONGO_URL, { dbName: db }).asPromise();
      await m.dropDatabase();
      await m.close();
      await dropBrokerPrefix(prefix);
    },
  };
}

function signalEvent(signalId: string) {
  const now = new Date().toISOString();
  return {
    id: newId('evt'),
    name: 'signal.new',
    occurred_at: now,
    signal: signalSnapshotFixture(signalId, now),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where events are published: a stack's bus exchange, or the floor's. */
interface EventTarget {
  channel: ConfirmChannel;
  exchange: string;
}

/** Publishes `count` events at `rate`/s; the publish time of each, by its signal id. */
async function publish(
  stack: EventTarget,
  count: number,
  rate: number,
  published = new Map<string, number>(),
): Promise<Map<string, number>> {
  const start = Date.now();
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    const e = signalEvent(newId('sig'));
    published.set(e.signal.id, Date.now());
    stack.channel.publish(stack.exchange, e.name, Buffer.from(JSON.stringify(e)), {
      messageId: e.id,
      persistent: true,
    });
  }
  await stack.channel.waitForConfirms();
  return published;
}

async function until(what: string, done: () => boolean, count: () => number, total: number, ms: number) {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) {
    process.stderr.write(`\r${what}: ${count()}/${total}   `);
    await sleep(250);
  }
  process.stderr.write(`\r${what}: ${count()}/${total}\n`);
}

interface Figures {
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  count: number;
}

function figures(latencies: number[], spanMs: number): Figures {
  const sorted = [...latencies].sort((a, b) => a - b);
  const q = (p: number) => percentile(sorted, p);
  return {
    perSecond: sorted.length / (Math.max(1, spanMs) / 1000),
    p50: q(0.5),
    p99: q(0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    count: sorted.length,
  };
}

/** First receipt of each (event, subscriber) pair, relative to its event's publish time. */
function systemFigures(published: Map<string, number>, rx: Receivers, nth = 0): Figures {
  const latencies: number[] = [];
  let first = Infinity;
  let last = 0;
  for (const [key, times] of rx.seen) {
    const sent = published.get(key.slice(0, key.indexOf('|')));
    const at = times[nth];
    if (sent === undefined || at === undefined) continue;
    latencies.push(at - sent);
    first = Math.min(first, sent);
    last = Math.max(last, at);
  }
  return figures(latencies, last - first);
}

/** The same receivers POSTed directly with undici: `events` events at `rate`/s, each to every URL. */
async function direct(urls: string[], events: number, rate: number, connections = 16): Promise<Figures> {
  const origins = [...new Set(urls.map((u) => new URL(u).origin))];
  const pools = new Map(origins.map((o) => [o, new Pool(o, { connections })]));
  const latencies: number[] = [];
  const inflight: Promise<void>[] = [];
  const payload = JSON.stringify(signalEvent('sig_direct'));
  const start = Date.now();
  for (let i = 0; i < events; i++) {
    const due = start + (i * 1000) / rate;
    if (due > Date.now()) await sleep(due - Date.now());
    const key = `base_${i}_${Date.now()}`;
    const t0 = Date.now();
    for (const url of urls) {
      const u = new URL(url);
      inflight.push(
        pools
          .get(u.origin)!
          .request({
            method: 'POST',
            path: u.pathname,
            headers: { 'content-type': 'application/json', 'x-bench-event': key },
            body: payload,
          })
          .then(async (r) => {
            await r.body.text();
            latencies.push(Date.now() - t0);
          }),
      );
    }
  }
  await Promise.all(inflight);
  const span = Date.now() - start;
  await Promise.all([...pools.values()].map((p) => p.close()));
  return figures(latencies, span);
}

const row = (name: string, f: Figures) =>
  console.log(
    `${name.padEnd(46)} ${f.perSecond.toFixed(0).padStart(9)} ${f.p50.toFixed(0).padStart(8)} ${f.p99.toFixed(0).padStart(8)} ${f.max.toFixed(0).padStart(8)} ${String(f.count).padStart(8)}`,
  );
const header = () =>
  console.log(
    `${'path'.padEnd(46)} ${'deliv/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)} ${'count'.padStart(8)}`,
  );

let void_ = false;
async function checkLedger(stack: Stack, ids: string[], events: number, rx: Receivers): Promise<boolean> {
  const expected = events * ids.length;
  const l = await stack.ledger(ids);
  const stored = l.succeeded + l.failed + l.pending;
  const responded2xx = [...rx.succeeded].filter((k) => !k.startsWith('base_')).length;
  const ok = stored === expected && l.succeeded <= responded2xx;
  console.log(
    `ledger: ${events} events × ${ids.length} subscriptions = ${expected}; stored: ${l.succeeded} succeeded + ${l.failed} failed + ${l.pending} pending = ${stored}; receivers responded 2xx to ${responded2xx} pairs → ${ok ? 'OK' : 'VOID'}`,
  );
  if (!ok) void_ = true;
  return ok;
}

/** First attempts completed (any response) of the events in `published`, per second from the first publish. */
function completedPerSecond(published: Map<string, number>, rx: Receivers): number {
  let first = Infinity;
  let last = 0;
  let count = 0;
  for (const [key, at] of rx.completed) {
    const sent = published.get(key.slice(0, key.indexOf('|')));
    if (sent === undefined) continue;
    count += 1;
    first = Math.min(first, sent);
    last = Math.max(last, at);
  }
  return count / (Math.max(1, last - first) / 1000);
}

/** Least-squares slope (per second) of [seconds, value] samples. */
function slopePerSecond(samples: Array<[number, number]>): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mx = samples.reduce((a, [x]) => a + x, 0) / n;
  const my = samples.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = samples.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = samples.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

// ---------------------------------------------------------------------------------------------

/** What one pipeline (the service, or the floor) did with the measured events of a steady run. */
interface FirstAttemptRun {
  published: Map<string, number>;
  figures: Figures;
  /** First attempts completed (any response) per second of the offered window. */
  delivered: number;
  backlog: Array<[number, number]>;
  drainedAfter: number;
  /** CPU (µs) per group over the measured events. */
  cpu: CpuGroups;
  warm?: Figures;
}

/**
 * Publishes a warm-up and then the measured events at `rate`/s to `target`, samples the backlog
 * once a second while publishing, waits until every pair is attempted and every first attempt
 * completed, and reads each process group's CPU over the measured part.
 */
async function firstAttemptRun(
  target: EventTarget,
  rx: Receivers,
  shape: { rate: number; seconds: number; subscribers: number; warmup: number },
  cpuGroups: (pid: number, command: string) => string | undefined,
  label: string,
): Promise<FirstAttemptRun> {
  const { rate, seconds, subscribers, warmup } = shape;
  const total = rate * seconds;
  const ofRun = (published: Map<string, number>) => (keys: Iterable<string>) => {
    let n = 0;
    for (const key of keys) if (published.has(key.slice(0, key.indexOf('|')))) n += 1;
    return n;
  };
  let warm: Figures | undefined;
  const warmPublished = new Map<string, number>();
  if (warmup > 0) {
    await publish(target, warmup, rate, warmPublished);
    const attempted = () => ofRun(warmPublished)(rx.seen.keys());
    await until(
      `${label} warm-up`,
      () => attempted() >= warmup * subscribers,
      attempted,
      warmup * subscribers,
      180_000,
    );
    warm = systemFigures(warmPublished, rx);
  }
  // Backlog: pairs of the measured events offered (published × subscribers) and not yet
  // attempted, once a second while they are published.
  const published = new Map<string, number>();
  const attempted = () => ofRun(published)(rx.seen.keys());
  const completed = () => ofRun(published)(rx.completed.keys());
  const backlog: Array<[number, number]> = [];
  const cpuBefore = cpuByGroup(cpuGroups);
  const publishStart = Date.now();
  const sampler = setInterval(
    () => backlog.push([(Date.now() - publishStart) / 1000, published.size * subscribers - attempted()]),
    1000,
  );
  await publish(target, total, rate, published);
  clearInterval(sampler);
  const all = total * subscribers;
  await until(`${label} first attempts`, () => attempted() >= all, attempted, all, 180_000);
  const drainedAfter = (Date.now() - publishStart) / 1000 - seconds;
  // Every first attempt completed (the slow receivers answer SLOW_RECEIVER_MS later).
  await until(`${label} first attempts completed`, () => completed() >= all, completed, all, 60_000);
  const cpu = cpuBetween(cpuBefore, cpuByGroup(cpuGroups));
  return {
    published,
    figures: systemFigures(published, rx),
    delivered: completedPerSecond(published, rx),
    backlog,
    drainedAfter,
    cpu,
    ...(warm ? { warm } : {}),
  };
}

/** `total = a, b, …` in µs per first attempt, largest first. */
function cpuPerAttempt(cpu: CpuGroups, firstAttempts: number): { total: number; line: string } {
  const total = [...cpu.values()].reduce((a, b) => a + b, 0) / firstAttempts;
  const parts = [...cpu]
    .sort((a, b) => b[1] - a[1])
    .map(([group, us]) => `${group} ${(us / firstAttempts).toFixed(0)}`);
  return { total, line: `${total.toFixed(0)} = ${parts.join(', ')}` };
}

const backlogLine = (run: FirstAttemptRun, seconds: number) =>
  `backlog (pairs offered, not yet attempted): ${run.backlog.map(([, b]) => b).join(' ')}; growth over the second half ${slopePerSecond(run.backlog.filter(([t]) => t >= seconds / 2)).toFixed(1)} pairs/s; all attempted ${Math.max(0, run.drainedAfter).toFixed(1)} s after the last publish`;

/**
 * The floor (webhook-floor.ts) against the same receivers, at the same rate, after the service's
 * stack is gone (its retries would otherwise land in the floor's figures): its own queues,
 * exchange and database, removed afterwards.
 */
async function floorRun(
  rx: Receivers,
  shape: { rate: number; seconds: number; subscribers: number; warmup: number },
  connections: number,
  store: 'plain' | 'service',
  without: string,
): Promise<FirstAttemptRun> {
  const db = `bench_webhooks_floor_${store}_${Date.now()}`;
  const prefix = `${db}.`;
  const floor = await startService('infra/bench/dist/webhook-floor.js', 4504, {
    FLOOR_DB: db,
    FLOOR_PREFIX: prefix,
    FLOOR_URLS: rx.urls.join(','),
    FLOOR_CONNECTIONS: String(connections),
    FLOOR_STORE: store,
    FLOOR_WITHOUT: store === 'service' ? without : '',
  });
  const conn = await connect(infra().AMQP_URL);
  try {
    const channel = await conn.createConfirmChannel();
    const target = { channel, exchange: `${prefix}signal.events` };
    return await firstAttemptRun(
      target,
      rx,
      shape,
      machineGroups(
        new Map([
          [floor.child.pid, 'floor'],
          [process.pid, 'bench'],
        ]),
      ),
      'floor',
    );
  } finally {
    await floor.stop();
    const cleanup = await conn.createChannel();
    for (const q of ['floor.events', 'floor.jobs', 'floor.retry']) await cleanup.deleteQueue(`${prefix}${q}`);
    await cleanup.deleteExchange(`${prefix}signal.events`);
    await conn.close().catch(() => undefined);
    const m = await mongoose.createConnection(infra().MONGO_URL, { dbName: db }).asPromise();
    await m.dropDatabase();
    await m.close();
  }
}

async function steady(): Promise<void> {
  const rate = num('rate');
  const seconds = num('seconds');
  const subscribers = num('subscribers');
  const total = rate * seconds;
  const warmupSeconds = Number(opts.warmup);
  if (!Number.isInteger(warmupSeconds) || warmupSeconds < 0) {
    console.error('webhooks bench: --warmup must be a whole number ≥ 0');
    process.exit(2);
  }
  const warmup = rate * warmupSeconds;
  const failingPct = Number(opts.failing);
  if (!Number.isFinite(failingPct) || failingPct < 0 || failingPct > 100) {
    console.error('webhooks bench: --failing must be a percentage, 0 … 100');
    process.exit(2);
  }
  const failing = Math.round((subscribers * failingPct) / 100);
  const fleet: Fleet = {
    failing,
    slow: failingPct > 0 ? Math.max(1, Math.round((subscribers * failingPct) / 500)) : 0,
  };
  console.log(
    `\n## steady: ${rate} events/s × ${seconds} s × ${subscribers} subscribers (after a ${warmupSeconds} s warm-up)${failingPct > 0 ? `; ${fleet.failing} receivers answer 500, ${fleet.slow} take ${SLOW_RECEIVER_MS / 1000} s` : ''}`,
  );
  const otherWork = readCommandLine(CLI, () => numberOption(opts['other-work'], 'other-work', { min: 0 }));
  if (otherWork > 100) exitWithUsage(CLI, '--other-work is a percentage of one core, 0 … 100');
  const busy = otherWork > 0 ? startOtherWork(otherWork) : undefined;
  if (busy) console.log(`other work: one process busy ${otherWork} ms of every 100 ms, beside the whole run`);
  const rx = await startReceivers(subscribers, () => ({ status: 200 }), fleet);
  // A 4 s receiver offered `rate` events/s keeps up only with rate × 4 s attempts in flight: the
  // worker may give one subscription the concurrency the direct baseline gives it (its
  // connections per receiver below), within its own limit of a quarter of the account's POSTs.
  const slowInFlight = Math.ceil((rate * SLOW_RECEIVER_MS) / 1000) + 16;
  // Enough connections that a slow receiver's requests in flight do not queue its neighbours'.
  const connections = fleet.slow > 0 ? slowInFlight : 16;
  const shape = { rate, seconds, subscribers, warmup };
  const stack = await startStack(
    'steady',
    fleet.slow > 0 ? { WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: String(Math.max(50, slowInFlight)) } : {},
  );
  let stackStopped = false;
  try {
    const ids = await stack.subscribe(rx.urls);
    const attemptsBefore = await stack.attemptsByOutcome();
    // Every RabbitMQ, FerretDB and PostgreSQL process on the machine counts: run alone (the
    // bench's own FerretDB, the shared broker and database), or the figures carry others' work.
    const groups = machineGroups(
      new Map([
        [stack.workerPid, 'worker'],
        [stack.api.child.pid, 'API'],
        [process.pid, 'bench'],
      ]),
    );
    const run = await firstAttemptRun(stack, rx, shape, groups, 'service');
    const attemptsAfter = await stack.attemptsByOutcome();
    const baseline = await direct(rx.urls, total, rate, connections);
    header();
    row('signed delivery through queue + worker', run.figures);
    row('direct undici POST, same receivers and rate', baseline);
    if (run.warm) row('(warm-up, not in the figures above)', run.warm);
    const ratio = run.delivered / baseline.perSecond;
    console.log(backlogLine(run, seconds));
    console.log(
      `ratio first attempts/s system/direct ${ratio.toFixed(2)}; target ≥ 0.9 and the backlog does not grow`,
    );
    // Per first attempt of the measured events: what each process used while they were made
    // (retries of earlier events included), and the jobs put back to wait outside the worker.
    const firstAttempts = total * subscribers;
    const ours = cpuPerAttempt(run.cpu, firstAttempts);
    console.log(`CPU per first attempt (µs, /proc over the measured run): ${ours.line}`);
    const outcomes = Object.keys(attemptsAfter)
      .sort()
      .map((k) => `${k} ${(attemptsAfter[k] ?? 0) - (attemptsBefore[k] ?? 0)}`);
    console.log(`worker attempts by outcome over the measured run: ${outcomes.join(', ')}`);
    const balanced = await checkLedger(stack, ids, warmup + total, rx);
    const summary = `webhooks: offered ${rate * subscribers}/s, delivered ${run.delivered.toFixed(0)}/s (${ratio.toFixed(2)}× direct), ${balanced ? 'ledger balanced' : 'ledger VOID (does not balance)'}, p99 commit→first byte ${run.figures.p99} ms`;
    console.log(summary);
    if (!opts.floor) return;
    stackStopped = true;
    await stack.stop();
    // The plain floor, then the same floor writing the service's documents to its collections.
    const floors: Array<[string, FirstAttemptRun]> = [];
    for (const store of ['plain', 'service'] as const) {
      const without = opts['floor-without'];
      const name =
        store === 'plain'
          ? 'floor'
          : `floor with our store${without === '' ? '' : `, without ${without.split(',').join(' and ')}`}`;
      console.log(
        `\n## ${name} (webhook-floor.ts${store === 'plain' ? '' : `, FLOOR_STORE=service${without === '' ? '' : ` FLOOR_WITHOUT=${without}`}`}): the same receivers and rate, no service`,
      );
      const floor = await floorRun(rx, shape, connections, store, without);
      header();
      row(`${name}: signed delivery`, floor.figures);
      console.log(backlogLine(floor, seconds));
      console.log(`${name}: CPU per first attempt (µs): ${cpuPerAttempt(floor.cpu, firstAttempts).line}`);
      floors.push([name, floor]);
    }
    console.log(`\n${summary}`);
    for (const [name, floor] of floors) {
      const cpu = cpuPerAttempt(floor.cpu, firstAttempts).total;
      console.log(
        `${name}: delivered ${floor.delivered.toFixed(0)}/s (${(floor.delivered / baseline.perSecond).toFixed(2)}× direct), p99 commit→first byte ${floor.figures.p99} ms, ${cpu.toFixed(0)} µs of CPU per first attempt; ours ${(ours.total / cpu).toFixed(2)}× that`,
      );
    }
  } finally {
    if (!stackStopped) await stack.stop();
    await rx.close();
    busy?.kill();
  }
}

/** A process that spins `percent` ms of every 100 ms: other work on the machine, the same in every run. */
function startOtherWork(percent: number): ChildProcess {
  const spin = `const busy = ${percent}; (function tick() { const end = Date.now() + busy; while (Date.now() < end); setTimeout(tick, 100 - busy); })();`;
  return spawn(process.execPath, ['-e', spin], { stdio: 'ignore' });
}

async function fanout(): Promise<void> {
  const subscribers = num('fanout-subscribers');
  console.log(`\n## fanout: 1 event × ${subscribers} subscribers`);
  const rx = await startReceivers(subscribers, () => ({ status: 200 }));
  const stack = await startStack('fanout', {});
  try {
    const ids = await stack.subscribe(rx.urls);
    await sleep(1500); // past the worker's subscription cache
    const published = await publish(stack, 1, 1);
    const pairs = () => [...rx.seen.keys()].filter((k) => !k.startsWith('base_')).length;
    await until('delivered', () => pairs() >= subscribers, pairs, subscribers, 60_000);
    const system = systemFigures(published, rx);
    const baseline = await direct(rx.urls, 1, 1);
    header();
    row('signed delivery through queue + worker', system);
    row('direct undici POST, same receivers', baseline);
    console.log(`all ${system.count} delivered within ${system.max} ms of the event (target ≤ 3,000 ms)`);
    await checkLedger(stack, ids, 1, rx);
  } finally {
    await stack.stop();
    await rx.close();
  }
}

async function retries(): Promise<void> {
  const deliveries = num('retry-deliveries');
  const subscribers = num('retry-subscribers');
  const rate = num('retry-rate');
  const maxDelayS = num('max-delay');
  const events = Math.ceil(deliveries / subscribers);
  console.log(
    `\n## retries: ${events} events × ${subscribers} subscribers = ${events * subscribers} deliveries at ${rate} events/s; every first attempt got 503 Retry-After 1…${maxDelayS} s (uniform)${maxDelayS < 900 ? ` — shortened from 900 s by --max-delay` : ''}`,
  );
  let pendingNow = 0;
  let pendingPeak = 0;
  const rx = await startReceivers(subscribers, (_key, before) => {
    if (before > 0) {
      if (before === 1) pendingNow -= 1;
      return { status: 200 };
    }
    pendingNow += 1;
    pendingPeak = Math.max(pendingPeak, pendingNow);
    return { status: 503, headers: { 'retry-after': String(1 + Math.floor(Math.random() * maxDelayS)) } };
  });
  // A base retry delay below 1 s, so the receivers' Retry-After always sets the due time.
  const stack = await startStack('retries', {
    WEBHOOK_RETRY_DELAYS_MS: '100,100,100',
    WEBHOOK_MAX_RETRY_AFTER_MS: String(maxDelayS * 1000),
  });
  try {
    const ids = await stack.subscribe(rx.urls);
    const started = Date.now();
    const published = await publish(stack, events, rate);
    const total = events * subscribers;
    const firsts = () => rx.seen.size;
    await until('first attempts (failed)', () => firsts() >= total, firsts, total, 600_000);
    const seconds = () => [...rx.seen.values()].filter((t) => t.length >= 2).length;
    await until(
      `retries fired (peak pending ${pendingPeak})`,
      () => seconds() >= total,
      seconds,
      total,
      maxDelayS * 1000 + 300_000,
    );
    const lateness: number[] = [];
    for (const [key, times] of rx.seen) {
      const due = rx.dueAt.get(key);
      const retryAt = times[1];
      if (due !== undefined && retryAt !== undefined) lateness.push(retryAt - due);
    }
    const late = figures(lateness, 1000);
    const system = systemFigures(published, rx);
    const sample = Math.min(events, Math.ceil(10_000 / subscribers));
    const baseline = await direct(rx.urls, sample, rate);
    header();
    row('first attempts through queue + worker', system);
    row(`direct undici POST (${sample} events), same rate`, baseline);
    console.log(
      `retry lateness after due time (receiver clock; due = failure response + Retry-After): p50 ${late.p50} ms, p99 ${late.p99} ms, max ${late.max} ms over ${late.count} retries; peak pending ${pendingPeak}; ${Math.round((Date.now() - started) / 1000)} s (target p99 ≤ 1,000 ms)`,
    );
    await checkLedger(stack, ids, events, rx);
  } finally {
    await stack.stop();
    await rx.close();
  }
}

async function main() {
  console.log(
    'webhooks bench — worker, API, database, broker, receivers and load generator share this machine (2 cores)',
  );
  if (opts['cpu-prof']) rmSync(WORKER_PROFILES, { recursive: true, force: true });
  const run = { steady, fanout, retries };
  for (const name of chosen) await run[name]();
  if (void_) {
    console.log('\nVOID: a ledger did not balance');
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
