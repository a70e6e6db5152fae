import { connect } from 'amqplib';
import mongoose from 'mongoose';
import { ROUTES, SIGNAL_EVENT_VERSION, type SignalEvent } from '@signal/contracts';
import { deleteKeysMatching, newId, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { Pool } from 'undici';
import {
  benchInternalToken,
  benchApiKey,
  wholeNumberOption,
  dropBrokerPrefix,
  infra,
  progress,
  settle,
  startService,
  table,
  timed,
  type LoadResult,
  benchRedis,
} from './harness';

/**
 * pnpm bench stats [--count 1000000] [--requests 1000] [--store-at 5000] [--write-rate 50]
 *
 * Loads a projection of --count signals (created over 40 days) straight into the stats
 * service's store, starts the service (which builds its Redis aggregates by streaming the
 * projection once: timed), then, after a warm-up of 20 unmeasured requests per row, measures
 * GET /v1/stats for every (type, period), direct, and
 * the four periods through the gateway; again while signal events arrive at --write-rate/s;
 * the write-to-visible latency (an event published until /v1/stats counts it); Redis bytes per
 * signal. Beside them, in the same run: the store-query path (the projection aggregated per
 * request, as the fallback does) measured at --store-at signals.
 */
const TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'] as const;
const STATUSES = ['active', 'winner', 'dead', 'rugged'] as const;
const PERIODS = ['24h', '7d', '30d', 'all'] as const;
const DAY = 86_400_000;

const CLI = {
  name: 'stats bench',
  usage: 'usage: pnpm bench stats [--count 20000] [--requests 1000] [--store-at 5000] [--write-rate 50]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    count: { type: 'string', default: '20000' },
    requests: { type: 'string', default: '1000' },
    'store-at': { type: 'string', default: '5000' },
    'write-rate': { type: 'string', default: '50' },
  }),
);
const num = (name: keyof typeof opts): number => wholeNumberOption(CLI, opts, name);

const projected = (j: number, total: number) => {
  const status = STATUSES[j % 4]!;
  return {
    _id: `sig_${String(j).padStart(26, '0')}`,
    type: TYPES[j % 6]!,
    status,
    is_winner: status === 'winner' ? 1 : 0,
    roi: ((j * 37) % 900) - 90,
    created_at: new Date(Date.now() - 60_000 - (j / total) * 40 * DAY),
    version: 1,
  };
};

function event(
  id: string,
  version: number,
  createdAt: Date,
  status: (typeof STATUSES)[number],
  roi: number,
  type: (typeof TYPES)[number] = 'new',
): SignalEvent {
  const at = new Date().toISOString();
  return {
    schema_version: SIGNAL_EVENT_VERSION,
    id: newId('evt'),
    name: 'signal.updated',
    occurred_at: at,
    signal: {
      id,
      token: {
        symbol: 'BENCH',
        name: 'Bench',
        contract: 'So1anaBench000000000pump',
        age_hours: 1,
        dex_paid: false,
        socials: { twitter: null, telegram: null, website: null },
      },
      metrics: {
        mcap_entry: 1000,
        mcap_current: 1000,
        volume_24h: 1,
        holders: 1,
        liquidity: 1,
        mcap_ath: 1000,
      },
      performance: { roi, ath_roi: Math.max(roi, 0), status, time_to_ath_hours: 0 },
      type,
      is_premium: false,
      created_at: createdAt.toISOString(),
      updated_at: at,
      version,
    },
  };
}

async function main() {
  const count = num('count');
  const requests = num('requests');
  const storeAt = Math.min(num('store-at'), count);
  const writeRate = num('write-rate');
  const db = `bench_stats_${Date.now()}`;
  const { MONGO_URL, AMQP_URL } = infra();
  const conn = await mongoose.createConnection(MONGO_URL, { dbName: db }).asPromise();
  const projection = conn.collection<ReturnType<typeof projected>>('signal_projection');
  const redis = benchRedis();
  const amqp = await connect(AMQP_URL);
  const channel = await amqp.createConfirmChannel();
  const exchange = `${db}.signal.events`;
  const started = Date.now();
  const rows: LoadResult[] = [];
  let stats: Awaited<ReturnType<typeof startService>> | undefined;
  let gateway: Awaited<ReturnType<typeof startService>> | undefined;
  try {
    // Store-query path at --store-at: what the fallback runs per request.
    const storeQuery = async (type: (typeof TYPES)[number] | undefined, since: Date | undefined) => {
      const match = { ...(type ? { type } : {}), ...(since ? { created_at: { $gt: since } } : {}) };
      const sumBy = (v: 1 | string) =>
        projection
          .aggregate([{ $match: match }, { $group: { _id: '$type', v: { $sum: v } } }], { maxTimeMS: 10_000 })
          .toArray();
      await Promise.all([
        sumBy(1),
        sumBy('$is_winner'),
        sumBy('$roi'),
        projection.find(match).sort({ roi: -1 }).limit(1).toArray(),
      ]);
    };
    for (let i = 0; i < count; i += 1000) {
      const n = Math.min(1000, count - i);
      await projection.insertMany(
        Array.from({ length: n }, (_, k) => projected(i + k, count)),
        {
          ordered: false,
        },
      );
      progress('projection', i + n, count, started);
      if (i + n === storeAt) {
        for (const period of ['24h', 'all'] as const)
          rows.push(
            await timed(`store path @${storeAt} ?period=${period}`, 5, () =>
              storeQuery(undefined, period === 'all' ? undefined : new Date(Date.now() - DAY)),
            ),
          );
      }
    }
    const loadSeconds = (Date.now() - started) / 1000;

    const rebuildStarted = Date.now();
    stats = await startService('services/stats/dist/main.js', 4401, {
      STATS_DB: db,
      REDIS_PREFIX: `${db}:`,
      AMQP_PREFIX: `${db}.`,
    });
    const readyKey = `${db}:stats:{agg}:ready`;
    while ((await redis.exists(readyKey)) === 0) await new Promise((r) => setTimeout(r, 200));
    const rebuildSeconds = (Date.now() - rebuildStarted) / 1000;

    gateway = await startService('services/api-gateway/dist/main.js', 4400, {
      GATEWAY_DB: `${db}_gateway`,
      REDIS_PREFIX: `${db}:gw:`,
      SIGNALS_URL: stats.url,
      STATS_URL: stats.url,
      WEBHOOKS_URL: stats.url,
    });
    const { key } = benchApiKey(`${db}_gateway`, `${db}:gw:`, `${db}@bench.local`);

    const direct = new Pool(stats.url, { connections: 2 });
    const viaGateway = new Pool(gateway.url, { connections: 2 });
    const get = async (pool: Pool, qs: string, auth: string) => {
      const res = await pool.request({
        method: 'GET',
        path: `${ROUTES.getStats.path}${qs}`,
        headers: { authorization: auth },
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${qs} → ${res.statusCode} ${text.slice(0, 200)}`);
      return JSON.parse(text) as { data: { total_signals: number } };
    };
    const internal = () => `Bearer ${benchInternalToken('stats', 'acc_bench')}`;

    // Warm-up, not measured: every row's query a few times direct and through the gateway, so
    // the first row does not carry the services' JIT compilation and the rebuild's garbage.
    for (let round = 0; round < 20; round++)
      for (const type of [undefined, ...TYPES])
        for (const period of PERIODS) {
          const qs = `?period=${period}${type ? `&type=${type}` : ''}`;
          await get(direct, qs, internal());
          if (!type) await get(viaGateway, qs, `Bearer ${key}`);
        }

    // The floor, in the same run: the service's liveness route (no Redis, no store) responds
    // through the same HTTP stack; its p99 is what the machine (two cores shared with the load
    // generator, Redis, RabbitMQ, FerretDB and PostgreSQL) adds to any response.
    const alive = async () => {
      const res = await direct.request({ method: 'GET', path: '/healthz' });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`/healthz → ${res.statusCode}`);
    };
    // The rebuild, the gateway's start and the warm-up leave work behind (garbage collection,
    // FerretDB's statistics); the quiet rows start once the machine is quiet.
    const settledMs = await settle();
    const floor = await timed('direct  /healthz (floor: no work)', requests, alive);

    const quiet: LoadResult[] = [];
    for (const type of [undefined, ...TYPES])
      for (const period of PERIODS) {
        const qs = `?period=${period}${type ? `&type=${type}` : ''}`;
        quiet.push(
          await timed(`direct  ${qs}`, requests, () => get(direct, qs, internal()).then(() => undefined)),
        );
      }
    const throughGateway: LoadResult[] = [];
    for (const period of PERIODS)
      throughGateway.push(
        await timed(`gateway ?period=${period}`, requests, () =>
          get(viaGateway, `?period=${period}`, `Bearer ${key}`).then(() => undefined),
        ),
      );

    // While writes arrive: events for existing signals (new versions) at --write-rate/s.
    let writing = true;
    let published = 0;
    const writer = (async () => {
      let v = 2;
      while (writing) {
        const tick = Date.now();
        for (let k = 0; k < writeRate / 10; k++) {
          const j = Math.floor(Math.random() * count);
          const p = projected(j, count);
          const e = event(p._id, v, p.created_at, STATUSES[(j + v) % 4]!, ((j * 13 + v) % 700) - 90, p.type);
          channel.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), {
            messageId: e.id,
            persistent: true,
          });
          published += 1;
        }
        v += 1;
        await channel.waitForConfirms();
        await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - tick))));
      }
    })();
    // The write path warms up first (its first events compile the consumer's code and open the
    // projection's statements): what is measured is reads beside a steady stream of writes.
    await new Promise((r) => setTimeout(r, 3_000));
    const writing24h = await timed(`direct  ?period=24h while ${writeRate} writes/s`, requests, () =>
      get(direct, '?period=24h', internal()).then(() => undefined),
    );
    const writingAll = await timed(`direct  ?period=all while ${writeRate} writes/s`, requests, () =>
      get(direct, '?period=all', internal()).then(() => undefined),
    );
    const writingFloor = await timed(`direct  /healthz while ${writeRate} writes/s`, requests, alive);
    writing = false;
    await writer;

    // Write-to-visible: a new signal's event until the all-time total counts it. Not the 24h
    // total: at 1,000,000 signals over 40 days, one ages out of the last 24 h every few
    // seconds, so the 24h total could fall back to where it was and this loop never end.
    const visible = await timed('write-to-visible (event → /v1/stats)', 30, async () => {
      const before = (await get(direct, '?period=all', internal())).data.total_signals;
      const e = event(newId('sig'), 1, new Date(), 'winner', 100);
      channel.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), {
        messageId: e.id,
        persistent: true,
      });
      while ((await get(direct, '?period=all', internal())).data.total_signals <= before) {
        /* poll */
      }
    });

    let aggBytes = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${db}:stats:{agg}:*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) aggBytes += Number(await redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    } while (cursor !== '0');

    console.log(
      `\nprojection of ${count} signals loaded in ${loadSeconds.toFixed(0)} s; aggregates built from it in ${rebuildSeconds.toFixed(1)} s; ${requests} sequential requests per row (p99: ${requests - Math.floor(0.99 * requests) - 1} samples slower); the quiet rows started after ${(settledMs / 1000).toFixed(1)} s of waiting for a quiet machine; ${published} events published during the write run\n`,
    );
    table([...rows, floor, ...quiet, ...throughGateway, writing24h, writingAll, writingFloor, visible]);
    const quiet24h = quiet.find((r) => r.name === 'direct  ?period=24h')!;
    const quietAll = quiet.find((r) => r.name === 'direct  ?period=all')!;
    const store24h = rows.find((r) => r.name.includes('24h'));
    console.log(
      `\n  worst direct p99 over every (type, period): ${Math.max(...quiet.map((r) => r.p99)).toFixed(2)} ms`,
    );
    if (store24h)
      console.log(
        `  store path @${storeAt} / aggregates @${count}, ?period=24h p50: ${(store24h.p50 / quiet24h.p50).toFixed(0)}×`,
      );
    const over10 = quiet.filter((r) => r.p99 > 10).length;
    console.log(
      `  direct rows with p99 over 10 ms: ${over10} of ${quiet.length}; the floor's p99 ${floor.p99.toFixed(2)} ms (quiet), ${writingFloor.p99.toFixed(2)} ms (while writes arrive)`,
    );
    console.log(
      `  p99 while writes arrive / quiet: 24h ${(writing24h.p99 / quiet24h.p99).toFixed(2)}×, all ${(writingAll.p99 / quietAll.p99).toFixed(2)}×, floor ${(writingFloor.p99 / floor.p99).toFixed(2)}×`,
    );
    console.log(
      `  Redis: ${(aggBytes / 1024 / 1024).toFixed(1)} MiB of aggregates, ${Math.round(aggBytes / count)} bytes per signal`,
    );
    await direct.close();
    await viaGateway.close();
  } finally {
    await gateway?.stop();
    await stats?.stop();
    await channel.close().catch(() => undefined);
    await amqp.close().catch(() => undefined);
    await dropBrokerPrefix(`${db}.`).catch(() => undefined);
    await deleteKeysMatching(redis, `${db}:*`);
    redis.disconnect();
    await conn
      .useDb(`${db}_gateway`)
      .dropDatabase()
      .catch(() => undefined);
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
