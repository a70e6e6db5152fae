import mongoose from 'mongoose';
import { signInternalToken } from '@signal/service-kit';
import { Pool } from 'undici';
import { SECRETS, arg, infra, progress, startService, table, timed, type LoadResult } from './harness';

/**
 * pnpm bench signals [--count 3000] [--requests 10]   (--count 1000000 against MongoDB: MONGO_URL=…)
 * Backfills signals through the ingest bulk API (progress shown), then measures GET /v1/signals
 * for (a) page 1 without filters, (b) type+status+since, (c) a deep page (5,000 of limit 20)
 * by `page` and by `cursor` — each beside the same query run by the driver alone (baseline),
 * with the document count and what the server's explain says about index use.
 */
const TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'];

async function main() {
  const count = arg('count', 3_000);
  const requests = arg('requests', 10);
  const db = `bench_signals_${Date.now()}`;
  const signals = await startService('services/signals/dist/main.js', 4201, {
    SIGNALS_DB: db,
    AMQP_PREFIX: `${db}.`,
  });
  const pool = new Pool(signals.url, { connections: 4 });
  const conn = await mongoose.createConnection(infra().MONGO_URL, { dbName: db }).asPromise();
  try {
    const started = Date.now();
    const BATCH = 1000;
    for (let i = 0; i < count; i += BATCH) {
      const n = Math.min(BATCH, count - i);
      const signalsBatch = Array.from({ length: n }, (_, k) => ({
        token: {
          symbol: `B${i + k}`,
          name: `Bench ${i + k}`,
          contract: `So1ana${String(i + k).padStart(12, '0')}pump`,
          age_hours: 1,
        },
        metrics: {
          mcap_entry: 50_000 + ((i + k) % 1000) * 100,
          volume_24h: 1000,
          holders: 10,
          liquidity: 500,
        },
        type: TYPES[(i + k) % TYPES.length],
        created_at: new Date(Date.now() - ((i + k) / count) * 30 * 86_400_000 - 60_000).toISOString(),
      }));
      const res = await pool.request({
        method: 'POST',
        path: '/internal/signals/bulk',
        headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ signals: signalsBatch }),
      });
      await res.body.text();
      if (res.statusCode !== 201) throw new Error(`bulk insert answered ${res.statusCode}`);
      progress('backfill', i + n, count, started);
    }
    const backfillSeconds = (Date.now() - started) / 1000;
    const col = conn.db!.collection('signals');
    // Let the outbox relay finish publishing the backfill's events, so it does not share the
    // database with the measured requests.
    for (;;) {
      const pending = await col.countDocuments({ has_outbox: true });
      process.stderr.write(`\routbox: ${pending} signals with unpublished events   `);
      if (pending === 0) break;
      await new Promise((r) => setTimeout(r, 2000));
    }
    process.stderr.write('\n');
    const auth = () => ({
      authorization: `Bearer ${signInternalToken(SECRETS.INTERNAL_JWT_SECRET, 'signals', 'acc_bench', 60)}`,
    });
    const since = new Date(Date.now() - 7 * 86_400_000);
    const deep = Math.max(2, Math.min(5000, Math.floor(count / 20) - 1));
    const deepSkip = (deep - 1) * 20;
    const cursorDoc = await col
      .find({}, { projection: { _id: 1 } })
      .sort({ created_at: -1, _id: -1 })
      .skip(deepSkip - 1)
      .limit(1)
      .toArray();
    const cursor = cursorDoc[0] ? Buffer.from(String(cursorDoc[0]._id)).toString('base64url') : undefined;

    const scenarios: Array<{
      name: string;
      path: string;
      filter: Record<string, unknown>;
      skip: number;
      extra?: Record<string, unknown>;
    }> = [
      { name: '(a) page 1, no filter', path: '/v1/signals', filter: {}, skip: 0 },
      {
        name: '(b) type+status+since',
        path: `/v1/signals?type=wallet&status=active&since=${encodeURIComponent(since.toISOString())}`,
        filter: { type: 'wallet', 'performance.status': 'active', created_at: { $gt: since } },
        skip: 0,
      },
      {
        name: `(c) page ${deep} of limit 20 (skip)`,
        path: `/v1/signals?page=${deep}`,
        filter: {},
        skip: deepSkip,
      },
    ];
    if (cursor)
      scenarios.push({
        name: `(c') same depth by cursor`,
        path: `/v1/signals?cursor=${cursor}`,
        filter: { _id: { $lt: String(cursorDoc[0]!._id) } },
        skip: 0,
      });

    const rows: LoadResult[] = [];
    const explains: string[] = [];
    for (const s of scenarios) {
      const http = await timed(`${s.name} — via HTTP`, requests, async () => {
        const res = await pool.request({ method: 'GET', path: s.path, headers: auth() });
        const body = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`${s.path} → ${res.statusCode} ${body.slice(0, 200)}`);
      });
      const driver = await timed(`${s.name} — driver alone (baseline)`, requests, async () => {
        await Promise.all([
          col.find(s.filter).sort({ created_at: -1, _id: -1 }).skip(s.skip).limit(21).toArray(),
          col.countDocuments(s.filter.created_at || s.filter.type ? s.filter : {}),
        ]);
      });
      rows.push(http, driver);
      const matched = await col.countDocuments(s.filter);
      // FerretDB 1.24 refuses `skip` inside explain (int vs long); explain the same query without it there.
      const explain = (await col
        .find(s.filter)
        .sort({ created_at: -1, _id: -1 })
        .skip(s.skip)
        .limit(21)
        .explain()
        .catch(() => col.find(s.filter).sort({ created_at: -1, _id: -1 }).limit(21).explain())) as Record<
        string,
        unknown
      >;
      const planner = (explain.queryPlanner ?? {}) as Record<string, unknown>;
      // MongoDB reports stages and index names; FerretDB reports the PostgreSQL plan (node types, index names).
      const plan = [
        ...new Set(
          JSON.stringify(planner.winningPlan ?? planner.Plan ?? {}).match(
            /"(stage|indexName|Node Type|Index Name)":"[^"]+"/g,
          ) ?? [],
        ),
      ].join(' ');
      const ferret = ['filterPushdown', 'sortPushdown', 'limitPushdown']
        .filter((k) => k in explain)
        .map((k) => `${k}=${String(explain[k])}`)
        .join(' ');
      explains.push(
        `${s.name}: ${matched} matching documents; explain: ${plan || '(no winning plan reported)'} ${ferret}`.trim(),
      );
    }
    console.log(
      `\n${count} signals (backfill ${backfillSeconds.toFixed(0)} s, ${Math.round(count / backfillSeconds)}/s through the bulk ingest API); ${requests} sequential requests per row\n`,
    );
    table(rows);
    for (let i = 0; i < rows.length; i += 2)
      console.log(
        `ratio HTTP/driver p50 ${rows[i]!.name.split(' — ')[0]}: ${(rows[i]!.p50 / rows[i + 1]!.p50).toFixed(2)}`,
      );
    console.log('\nindex use');
    for (const e of explains) console.log(`  ${e}`);
  } finally {
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
    await pool.close();
    await signals.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
