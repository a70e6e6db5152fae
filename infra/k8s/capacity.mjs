#!/usr/bin/env node
// Capacity model of docs/capacity.md: replicas and data tier for 1k, 10k and 100k requests/s and
// 10M webhook deliveries/day, and which part saturates first. Plain Node, no dependencies.
//
//   node infra/k8s/capacity.mjs                         # the benches' latest figures (infra/bench/latest.json)
//   node infra/k8s/capacity.mjs --figures other.json    # figures from another file of that format
//   node infra/k8s/capacity.mjs --bench-dir bench-results   # figures read from `pnpm bench …` text outputs
//   node infra/k8s/capacity.mjs --list-p99-ms 8 --stats-p99-ms 2   # any figure overridden by a flag
//   node infra/k8s/capacity.mjs --json
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** name → [default, meaning]. Measured: infra/bench/latest.json (2-core machine, everything shared). */
const MEASURED = {
  'bench-cores': [2, 'cores of the benchmark machine (load generator, services and stores share them)'],
  'db-direct-rps': [11378, 'GET /v1/signals/{id}, signals directly, req/s'],
  'db-gateway-rps': [6984, 'GET /v1/signals/{id}, through the gateway, req/s'],
  'nodb-direct-rps': [16434, 'GET /v1/signals/sig_0 (404, no database), signals directly, req/s'],
  'nodb-gateway-rps': [9206, 'GET /v1/signals/sig_0, through the gateway, req/s'],
  'list-p99-ms': [4.59, 'signals list p99 (type + status + since, via HTTP), ms'],
  'stats-p99-ms': [4.4, 'stats p99 (period=all, directly), ms'],
  'deliveries-per-s': [1000, 'webhook deliveries/s sustained without backlog'],
};
/** Not measurable on this machine: stated assumptions, each a flag. */
const ASSUMED = {
  'share-list': [0.6, 'share of requests that list signals'],
  'share-detail': [0.2, 'share of requests that read one signal'],
  'share-stats': [0.15, 'share of requests to /v1/stats'],
  'share-webhooks': [0.05, 'share of requests to /v1/webhooks…'],
  headroom: [0.7, 'target utilisation (the HPA target)'],
  'pod-cores': [1, 'CPU limit of one service pod (Node runs JavaScript on one core)'],
  'mongo-pool': [20, 'MongoDB connections per process (service-kit connectMongo maxPoolSize)'],
  'mongo-ops-per-core': [8000, 'indexed MongoDB reads/s one mongod core serves from cache'],
  'mongo-max-connections': [5000, 'client connections one mongod primary is allowed (its memory budget)'],
  'mongo-cores': [4, 'cores of one mongod (the replica-set primary takes reads and writes)'],
  'redis-ops-per-core': [
    60000,
    'rate-limit Lua calls (4 keys), index reads or MGETs/s one Redis shard serves',
  ],
  'rabbit-msgs-per-queue': [10000, 'persistent, confirmed messages/s through one quorum queue'],
  'deliveries-per-day': [10_000_000, 'webhook deliveries per day'],
  'delivery-peak': [4, 'peak delivery rate over the daily mean'],
  'min-replicas': [2, 'fewest replicas of any deployable (survive one pod)'],
};
const LOADS = [1_000, 10_000, 100_000];

let parsed;
try {
  parsed = parseArgs({
    strict: true,
    options: {
      ...Object.fromEntries(
        [...Object.keys(MEASURED), ...Object.keys(ASSUMED)].map((k) => [k, { type: 'string' }]),
      ),
      'bench-dir': { type: 'string' },
      figures: {
        type: 'string',
        default: fileURLToPath(new URL('../bench/latest.json', import.meta.url)),
      },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
} catch (err) {
  console.error(`${err.message} (--help lists the flags)`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  for (const [k, [d, m]] of Object.entries({ ...MEASURED, ...ASSUMED }))
    console.log(`--${k.padEnd(22)} ${String(d).padStart(9)}  ${m}`);
  console.log(`--figures FILE               the benches' latest figures (default infra/bench/latest.json)`);
  console.log(`--bench-dir DIR              read measured figures from pnpm bench outputs (DIR/<name>.txt)`);
  process.exit(0);
}

/** Figures from `pnpm bench` text outputs (infra/bench/run.sh tees them to bench-results/<name>.txt). */
function fromBench(dir) {
  const out = {};
  const read = (name) =>
    existsSync(path.join(dir, `${name}.txt`)) ? readFileSync(path.join(dir, `${name}.txt`), 'utf8') : '';
  const nums = (line) => line.slice(46).trim().split(/\s+/).map(Number); // table(): name padded to 46
  const gw = read('gateway').split('\n');
  const direct = gw.filter((l) => l.startsWith('(a) signals directly')).map(nums);
  const through = gw.filter((l) => l.startsWith('(b) gateway')).map(nums);
  if (direct.length >= 2 && through.length >= 2) {
    [out['db-direct-rps'], out['nodb-direct-rps']] = [direct[0][0], direct[1][0]];
    [out['db-gateway-rps'], out['nodb-gateway-rps']] = [through[0][0], through[1][0]];
  }
  const list = read('signals')
    .split('\n')
    .find((l) => l.startsWith('(b) type+status+since — via HTTP'));
  if (list) out['list-p99-ms'] = nums(list)[2];
  const stats = read('stats')
    .split('\n')
    .find((l) => l.startsWith('warm /v1/stats?period=all '));
  if (stats) out['stats-p99-ms'] = nums(stats)[2];
  const wh = read('webhooks')
    .split('\n')
    .find((l) => l.startsWith('signed delivery through queue + worker'));
  if (wh) out['deliveries-per-s'] = Number(wh.slice(44).trim().split(/\s+/)[0]);
  return out;
}

/**
 * Figures from the benches' latest rows (infra/bench/latest.json): per bench, rows named as the
 * bench prints them, with rps (req/s or deliveries/s), p50 and p99 (ms).
 */
function fromFigures(file) {
  if (!existsSync(file)) return {};
  let latest;
  try {
    latest = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    console.error(`--figures ${file}: not JSON (${err.message})`);
    process.exit(2);
  }
  const row = (rows, prefix) =>
    Array.isArray(rows) ? rows.find((r) => r.name?.startsWith(prefix)) : undefined;
  const routes = latest.gateway?.routes ?? {};
  const route = (start) => Object.entries(routes).find(([label]) => label.startsWith(start))?.[1];
  const out = {};
  const read = route('GET /v1/signals/{id}');
  const absent = route('GET /v1/signals/sig_0');
  out['db-direct-rps'] = row(read, '(a)')?.rps;
  out['db-gateway-rps'] = row(read, '(b)')?.rps;
  out['nodb-direct-rps'] = row(absent, '(a)')?.rps;
  out['nodb-gateway-rps'] = row(absent, '(b)')?.rps;
  out['list-p99-ms'] = row(latest.signals?.rows, 'direct  (b) type+status+since')?.p99;
  out['stats-p99-ms'] = row(latest.stats?.rows, 'direct  ?period=all')?.p99;
  out['deliveries-per-s'] = row(latest.webhooks?.rows, 'signed delivery through queue + worker')?.rps;
  return Object.fromEntries(Object.entries(out).filter(([, v]) => Number.isFinite(v)));
}

const latest = fromFigures(values.figures);
const bench = { ...latest, ...(values['bench-dir'] ? fromBench(values['bench-dir']) : {}) };
const f = {};
for (const [k, [d]] of Object.entries({ ...MEASURED, ...ASSUMED })) {
  const raw = values[k] ?? bench[k] ?? d;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`--${k}: a positive number, got ${raw}`);
    process.exit(2);
  }
  f[k] = n;
}

// Per-request CPU (core-seconds). The load generator does the same work per request in (a) and
// (b), so the throughput difference on the saturated machine is the gateway's own cost.
const gwCost = Math.max(
  f['bench-cores'] * (1 / f['nodb-gateway-rps'] - 1 / f['nodb-direct-rps']),
  f['bench-cores'] * (1 / f['db-gateway-rps'] - 1 / f['db-direct-rps']),
);
// A service's own HTTP work: the whole machine's time per direct 404 (includes the load
// generator's share, so an upper bound on the service's cost).
const svcCost = f['bench-cores'] / f['nodb-direct-rps'];
const deliveriesPerCore = f['deliveries-per-s'] / f['bench-cores'];
const ceil = (x) => Math.max(f['min-replicas'], Math.ceil(x - 1e-9));
const usable = f['pod-cores'] * f.headroom;

function plan(rps) {
  const list = rps * f['share-list'];
  const detail = rps * f['share-detail'];
  const statsRps = rps * f['share-stats'];
  const webhooks = rps * f['share-webhooks'];
  // CPU: requests × cost / usable cores of a pod. Pools (Little's law): in flight = rate × p99,
  // and each process holds at most mongo-pool MongoDB connections. A list holds one only while the
  // index is rebuilt (MongoDB serves it then); the bound counts every list as if it did.
  const signalsCpu = ((list + detail) * svcCost) / usable;
  const signalsPool = (list * f['list-p99-ms']) / 1000 / f['mongo-pool'];
  // Signal reads come from the timeline index in Redis: one page script per list, GET + HGET per
  // detail. MongoDB serves them only while the index is rebuilt or Redis is away (bounded by the
  // signals service's load shedder), so in steady state it carries webhook management.
  const mongoOps = webhooks;
  // One Lua call per request (limits) + one MGET per stats read + the index reads.
  const redisOps = rps + statsRps + list + detail * 2;
  const mongoCap = f['mongo-ops-per-core'] * f['mongo-cores'] * f.headroom;
  const redisCap = f['redis-ops-per-core'] * f.headroom;
  return {
    rps,
    'api-gateway': ceil((rps * gwCost) / usable),
    signals: ceil(Math.max(signalsCpu, signalsPool)),
    signalsBound:
      signalsPool > signalsCpu
        ? `MongoDB pool: ${Math.round((list * f['list-p99-ms']) / 1000)} list requests in flight`
        : 'CPU',
    stats: ceil((statsRps * svcCost) / usable), // warm responses come from Redis, not MongoDB
    statsInFlight: (statsRps * f['stats-p99-ms']) / 1000,
    'webhooks-api': ceil((webhooks * svcCost) / usable),
    mongoOps: Math.round(mongoOps),
    mongoShards: Math.max(1, Math.ceil(mongoOps / mongoCap)),
    redisOps: Math.round(redisOps),
    redisShards: Math.max(1, Math.ceil(redisOps / redisCap)),
    mongoConnections: 0, // filled in below: pods × pool
    // Where one shard / one primary / one queue stops: the request rate at which it reaches headroom.
    limits: {
      'MongoDB primary (webhook management)': mongoCap / ((mongoOps || 1) / rps),
      'Redis shard (rate limits + timeline index reads)': redisCap / (redisOps / rps),
      // As if every list in flight held a connection for its p99 (only while the index is rebuilt).
      'MongoDB connections (list requests in flight)':
        (f['mongo-max-connections'] * f.headroom) / (f['share-list'] * (f['list-p99-ms'] / 1000)),
    },
  };
}

const plans = LOADS.map(plan);
for (const p of plans) {
  const pods = p['api-gateway'] + p.signals + p.stats + p['webhooks-api'] + f['min-replicas'] * 2; // + worker, index Job
  p.mongoConnections = Math.round(pods * f['mongo-pool']);
}
const perDay = f['deliveries-per-day'];
const meanDeliveries = perDay / 86400;
const peakDeliveries = meanDeliveries * f['delivery-peak'];
const webhooksPlan = {
  mean: meanDeliveries,
  peak: peakDeliveries,
  workers: ceil(peakDeliveries / (deliveriesPerCore * usable)),
  mongoOps: Math.round(peakDeliveries * 2), // read the delivery, record the attempt
  queueLoad: peakDeliveries / (f['rabbit-msgs-per-queue'] * f.headroom),
};
const limits = plans[0].limits;
const firstName = Object.keys(limits).sort((a, b) => limits[a] - limits[b])[0];
const first = { part: firstName, atRps: Math.round(limits[firstName]) };

if (values.json) {
  console.log(
    JSON.stringify(
      {
        figures: f,
        fromFigures: Object.keys(latest),
        perRequest: { gwCost, svcCost, deliveriesPerCore },
        plans,
        webhooks: webhooksPlan,
        first,
      },
      null,
      2,
    ),
  );
  process.exit(0);
}

const k = (n) => (n >= 1000 ? `${+(n / 1000).toFixed(1)}k` : `${Math.round(n)}`);
const rows = [
  ['api-gateway pods', ...plans.map((p) => p['api-gateway']), '—'],
  ['signals pods', ...plans.map((p) => `${p.signals} (${p.signalsBound === 'CPU' ? 'CPU' : 'pool'})`), '—'],
  ['stats pods', ...plans.map((p) => p.stats), '—'],
  ['webhooks-api pods', ...plans.map((p) => p['webhooks-api']), '—'],
  ['webhooks-worker pods', ...plans.map(() => `${f['min-replicas']} (by deliveries)`), webhooksPlan.workers],
  [
    'MongoDB ops/s → replica set',
    ...plans.map(
      (p) => `${k(p.mongoOps)} → ${p.mongoShards === 1 ? '1 RS (3 members)' : `${p.mongoShards} shards × 3`}`,
    ),
    `${k(webhooksPlan.mongoOps)} → 1 RS`,
  ],
  ['MongoDB connections (pods × pool)', ...plans.map((p) => k(p.mongoConnections)), '—'],
  [
    'Redis ops/s → shards',
    ...plans.map(
      (p) =>
        `${k(p.redisOps)} → ${p.redisShards === 1 ? '1 primary + replica' : `Cluster, ${Math.max(3, p.redisShards)} shards`}`,
    ),
    '—',
  ],
  [
    'RabbitMQ',
    ...plans.map(() => '3-node cluster'),
    `3 nodes; deliveries queue at ${Math.round(webhooksPlan.queueLoad * 100)} % of one quorum queue`,
  ],
];
const header = ['', ...LOADS.map((l) => `${k(l)} req/s`), `${perDay / 1e6}M deliveries/day`];
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map(() => '---').join('|')}|`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
console.log('');
console.log(
  `gateway CPU per request ${(gwCost * 1e6).toFixed(0)} µs → ${Math.round(1 / gwCost)} req/s per gateway core;` +
    ` service HTTP work ≤ ${(svcCost * 1e6).toFixed(0)} µs → ≥ ${Math.round(1 / svcCost)} req/s per core;` +
    ` deliveries ${deliveriesPerCore.toFixed(1)}/s per core (end to end).`,
);
const source = [
  Object.keys(latest).length
    ? `${path.relative(process.cwd(), values.figures) || values.figures} (${Object.keys(latest).length} figures)`
    : 'built-in defaults',
];
if (values['bench-dir']) source.push(values['bench-dir']);
console.log(`figures: ${source.join(' + ')}, then flags.`);
console.log(
  `deliveries: mean ${meanDeliveries.toFixed(0)}/s, peak ${peakDeliveries.toFixed(0)}/s (×${f['delivery-peak']}).`,
);
const others = Object.keys(limits)
  .filter((n) => n !== first.part)
  .sort((a, b) => limits[a] - limits[b])
  .map((n) => `${n} at ${k(limits[n])} req/s`);
console.log(
  `saturates first: ${first.part} at about ${k(first.atRps)} req/s (then ${others.join(', ')});` +
    ' the stateless pods scale out and are never the limit.',
);
