import { ROUTES, fillPath } from '@signal/contracts';
import mongoose from 'mongoose';
import { deleteKeysMatching, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { Pool } from 'undici';
import {
  SECRETS,
  benchInternalToken,
  benchApiKey,
  dropBrokerPrefix,
  wholeNumberOption,
  infra,
  progress,
  startService,
  table,
  settle,
  timed,
  type LoadResult,
  benchRedis,
} from './harness';

/**
 * pnpm bench signals [--count 1000000] [--requests 1000] [--store-at 5000] [--concurrency 4]
 *
 * Loads --count signals through the bulk ingest API (several batches in flight), then measures
 * GET /v1/signals and GET /v1/signals/{id}, direct to the signals service and through the
 * gateway: (a) page 1, (b) type+status+since, (c) page 5,000 of 20 and (c') the same depth by
 * cursor, (d) detail. Beside them, in the same run, the store-query path (the driver running
 * the list query with its count) measured when the collection holds --store-at signals, the
 * largest size at which it stays within 10 s here, with the index path at that same size:
 * the ratio. Also: Redis bytes per signal of the timeline index, and write-to-visible latency
 * (an ingest until the signal is first in the list).
 */
const TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'];
const STATUSES = ['active', 'winner', 'dead', 'rugged'];

const CLI = {
  name: 'signals bench',
  usage: 'usage: pnpm bench signals [--count 20000] [--requests 1000] [--store-at 5000] [--concurrency 4]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    count: { type: 'string', default: '20000' },
    requests: { type: 'string', default: '1000' },
    'store-at': { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '4' },
  }),
);
const num = (name: keyof typeof opts): number => wholeNumberOption(CLI, opts, name);

function batchOf(from: number, n: number, total: number) {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const status = STATUSES[i % 4];
    return {
      token: {
        symbol: `B${i}`,
        name: `Bench ${i}`,
        contract: `So1ana${String(i).padStart(12, '0')}pump`,
        age_hours: 1,
        dex_paid: i % 2 === 0,
        socials: { twitter: 'https://x.com/bench' },
      },
      metrics: {
        mcap_entry: 50_000 + (i % 1000) * 100,
        mcap_current: 40_000 + (i % 1700) * 100,
        volume_24h: 1000,
        holders: 10 + (i % 500),
        liquidity: 500,
      },
      performance: { status },
      type: TYPES[i % TYPES.length],
      created_at: new Date(Date.now() - 120_000 - (i / total) * 30 * 86_400_000).toISOString(),
    };
  });
}

async function main() {
  const count = num('count');
  const requests = num('requests');
  const storeAt = Math.min(num('store-at'), count);
  const concurrency = num('concurrency');
  const db = `bench_signals_${Date.now()}`;
  const { MONGO_URL } = infra();
  const redis = benchRedis();
  const signals = await startService('services/signals/dist/main.js', 4201, {
    SIGNALS_DB: db,
    AMQP_PREFIX: `${db}.`,
    REDIS_PREFIX: `${db}:`,
  });
  const gateway = await startService('services/api-gateway/dist/main.js', 4200, {
    GATEWAY_DB: `${db}_gateway`,
    REDIS_PREFIX: `${db}:gw:`,
    SIGNALS_URL: signals.url,
    STATS_URL: signals.url,
    WEBHOOKS_URL: signals.url,
  });
  const direct = new Pool(signals.url, { connections: Math.max(4, concurrency) });
  const viaGateway = new Pool(gateway.url, { connections: 2 });
  const conn = await mongoose.createConnection(MONGO_URL, { dbName: db }).asPromise();
  const col = conn.db!.collection('signals');
  try {
    const { key } = benchApiKey(`${db}_gateway`, `${db}:gw:`, `${db}@bench.local`);
    const internalAuth = () => ({
      authorization: `Bearer ${benchInternalToken('signals', 'acc_bench')}`,
    });
    const get = async (pool: Pool, p: string, headers: Record<string, string>) => {
      const res = await pool.request({ method: 'GET', path: p, headers });
      const body = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${p} → ${res.statusCode} ${body.slice(0, 200)}`);
      return body;
    };

    // Load, with a pause at --store-at to measure the store path beside the index at equal size.
    const BATCH = 1000;
    const started = Date.now();
    let loaded = 0;
    let next = 0;
    const loadTo = async (target: number) => {
      const worker = async () => {
        while (next < target) {
          const from = next;
          const n = Math.min(BATCH, target - from);
          next += n;
          const res = await direct.request({
            method: 'POST',
            path: '/internal/signals/bulk',
            headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ signals: batchOf(from, n, count) }),
          });
          const text = await res.body.text();
          if (res.statusCode !== 201)
            throw new Error(`bulk insert responded ${res.statusCode}: ${text.slice(0, 200)}`);
          loaded += n;
          progress('load', loaded, count, started);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    };

    const since = new Date(Date.now() - 7 * 86_400_000);
    const filtered = `type=wallet&status=active&since=${encodeURIComponent(since.toISOString())}`;
    const drainOutbox = async () => {
      for (;;) {
        const pending =
          (await col.countDocuments({ has_outbox: true })) +
          (await conn.db!.collection('outbox_batches').countDocuments({}));
        process.stderr.write(`\routbox: ${pending} documents with unpublished events   `);
        if (pending === 0) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      process.stderr.write('\n');
    };
    await loadTo(storeAt);
    const loadPaused = Date.now();
    await drainOutbox();
    const atSmall: LoadResult[] = [];
    const storeRequests = Math.min(requests, 20);
    atSmall.push(
      await timed(`index  (a) page 1 @${storeAt}`, requests, () =>
        get(direct, ROUTES.listSignals.path, internalAuth()).then(() => undefined),
      ),
      await timed(`store  (a) page 1 @${storeAt}`, storeRequests, async () => {
        await Promise.all([
          col.find({}, { maxTimeMS: 10_000 }).sort({ created_at: -1, _id: -1 }).limit(21).toArray(),
          col.countDocuments({}, { maxTimeMS: 10_000 }),
        ]);
      }),
      await timed(`index  (b) type+status+since @${storeAt}`, requests, () =>
        get(direct, `${ROUTES.listSignals.path}?${filtered}`, internalAuth()).then(() => undefined),
      ),
      await timed(`store  (b) type+status+since @${storeAt}`, storeRequests, async () => {
        const f = { type: 'wallet', 'performance.status': 'active', created_at: { $gt: since } };
        await Promise.all([
          col.find(f, { maxTimeMS: 10_000 }).sort({ created_at: -1, _id: -1 }).limit(21).toArray(),
          col.countDocuments(f, { maxTimeMS: 10_000 }),
        ]);
      }),
    );
    const pausedMs = Date.now() - loadPaused;
    await loadTo(count);
    const loadSeconds = (Date.now() - started - pausedMs) / 1000;

    // The relay publishes the load's events; let it finish so it does not share the machine.
    const relayStarted = Date.now();
    await drainOutbox();
    const relaySeconds = (Date.now() - relayStarted) / 1000;

    // Redis bytes per signal: every key of the timeline index, measured whole.
    let indexBytes = 0;
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(
        cursor,
        'MATCH',
        `${db}:signals:{timeline}:*`,
        'COUNT',
        100,
      );
      cursor = nextCursor;
      for (const k of keys) indexBytes += Number(await redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    } while (cursor !== '0');

    const depth = Math.max(2, Math.min(5000, Math.floor(count / 20) - 1));
    const deepCursorId = JSON.parse(
      await get(direct, `${ROUTES.listSignals.path}?page=${depth - 1}&limit=20`, internalAuth()),
    ).data.at(-1).id as string;
    const deepCursor = Buffer.from(deepCursorId).toString('base64url');
    const someId = JSON.parse(
      await get(direct, `${ROUTES.listSignals.path}?limit=1&page=777`, internalAuth()),
    ).data[0].id as string;
    const scenarios: Array<[string, string]> = [
      ['(a) page 1', ROUTES.listSignals.path],
      ['(b) type+status+since', `${ROUTES.listSignals.path}?${filtered}`],
      [`(c) page ${depth} of 20`, `${ROUTES.listSignals.path}?page=${depth}&limit=20`],
      [`(c') same depth by cursor`, `${ROUTES.listSignals.path}?cursor=${deepCursor}&limit=20`],
      ['(d) detail', fillPath(ROUTES.getSignal.path, { signal_id: someId })],
    ];
    // Warm-up, not measured: each scenario a few times direct and through the gateway, so the
    // first row does not carry the JIT compilation of its path and the load's garbage; then the
    // rows start once the machine is quiet (as in the stats bench).
    for (let round = 0; round < 20; round++)
      for (const [, p] of scenarios) {
        await get(direct, p, internalAuth());
        await get(viaGateway, p, { authorization: `Bearer ${key}` });
      }
    const settledMs = await settle();
    const atLarge: LoadResult[] = [];
    for (const [name, p] of scenarios) {
      atLarge.push(
        await timed(`direct  ${name}`, requests, () => get(direct, p, internalAuth()).then(() => undefined)),
      );
      atLarge.push(
        await timed(`gateway ${name}`, requests, () =>
          get(viaGateway, p, { authorization: `Bearer ${key}` }).then(() => undefined),
        ),
      );
    }

    // Write-to-visible: from sending an ingest until the list's first item is that signal. 200
    // samples after 20 unmeasured writes, like the read rows: enough that p99 is not simply the
    // slowest sample.
    const writeAndSee = async () => {
      const res = await direct.request({
        method: 'POST',
        path: '/internal/signals',
        headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          ...batchOf(count + 1, 1, count)[0],
          created_at: undefined,
          performance: undefined,
        }),
      });
      const id = JSON.parse(await res.body.text()).data.id as string;
      for (;;) {
        const top = JSON.parse(await get(direct, `${ROUTES.listSignals.path}?limit=1`, internalAuth()))
          .data[0]?.id;
        if (top === id) return;
      }
    };
    for (let i = 0; i < 20; i++) await writeAndSee();
    const visible = await timed('write-to-visible (list)', 200, writeAndSee);

    console.log(
      `\n${count} signals; load ${loadSeconds.toFixed(0)} s through the bulk ingest API (${Math.round(count / loadSeconds)}/s, ${concurrency} batches of ${BATCH} in flight); relay drained ${relaySeconds.toFixed(0)} s after; ${requests} sequential requests per row, after 20 unmeasured rounds and ${(settledMs / 1000).toFixed(1)} s of waiting for a quiet machine\n`,
    );
    console.log(
      `At ${storeAt} signals — timeline index beside the store-query path (driver: list query + count):`,
    );
    table(atSmall);
    for (let i = 0; i < atSmall.length; i += 2)
      console.log(
        `  ratio store/index ${atSmall[i]!.name.split(' @')[0]!.replace('index  ', '')}: p50 ${(atSmall[i + 1]!.p50 / atSmall[i]!.p50).toFixed(1)}×, p99 ${(atSmall[i + 1]!.p99 / atSmall[i]!.p99).toFixed(1)}×`,
      );
    console.log(`\nAt ${count} signals — timeline index, direct and through the gateway:`);
    table([...atLarge, visible]);
    const p1 = atLarge[0]!;
    const deep = atLarge[4]!;
    console.log(`  deep page / page 1 (direct p99): ${(deep.p99 / p1.p99).toFixed(2)}×`);
    console.log(
      `  Redis: ${(indexBytes / 1024 / 1024).toFixed(1)} MiB for the index, ${Math.round(indexBytes / (count + 50))} bytes per signal`,
    );
  } finally {
    // The processes first: a running signals service takes its wiped index for a lost one and
    // rebuilds its ready mark (which would outlive the run).
    await direct.close();
    await viaGateway.close();
    await gateway.stop();
    await signals.stop();
    await deleteKeysMatching(redis, `${db}:*`);
    redis.disconnect();
    await dropBrokerPrefix(`${db}.`).catch(() => undefined);
    await conn.dropDatabase().catch(() => undefined);
    await conn
      .useDb(`${db}_gateway`)
      .dropDatabase()
      .catch(() => undefined);
    await conn.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
