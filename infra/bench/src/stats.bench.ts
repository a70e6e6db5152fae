import Redis from 'ioredis';
import mongoose from 'mongoose';
import { signInternalToken } from '@signal/service-kit';
import { Pool } from 'undici';
import { SECRETS, arg, infra, progress, startService, table, timed, type LoadResult } from './harness';

/**
 * pnpm bench stats [--count 20000] [--cold 5] [--warm 200]
 * GET /v1/stats over a projection of --count signals: cold (cache emptied before each
 * request) and warm, for `all` and `24h`, with and without `type`; beside the naive baseline
 * of aggregating a signals collection of the same size on every request, in the same run.
 */
const TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'];
const STATUSES = ['active', 'winner', 'dead', 'rugged'];

async function main() {
  const count = arg('count', 20_000);
  const coldN = arg('cold', 5);
  const warmN = arg('warm', 200);
  const db = `bench_stats_${Date.now()}`;
  const { MONGO_URL, REDIS_URL } = infra();
  const conn = await mongoose.createConnection(MONGO_URL, { dbName: db }).asPromise();
  const naiveDb = conn.useDb(`${db}_signals`);
  const redis = new Redis(REDIS_URL);
  const started = Date.now();
  try {
    for (let i = 0; i < count; i += 1000) {
      const n = Math.min(1000, count - i);
      const rows = Array.from({ length: n }, (_, k) => {
        const j = i + k;
        const status = STATUSES[j % 4]!;
        return {
          _id: `sig_${String(j).padStart(26, '0')}`,
          type: TYPES[j % 6]!,
          status,
          is_winner: status === 'winner' ? 1 : 0,
          roi: ((j * 37) % 900) - 90,
          created_at: new Date(Date.now() - (j / count) * 60 * 86_400_000),
          version: 1,
        };
      });
      await conn.db!.collection('signal_projection').insertMany(rows as never[]);
      await naiveDb.db!.collection('signals').insertMany(
        rows.map((r) => ({
          _id: r._id,
          type: r.type,
          performance: { status: r.status, roi: r.roi },
          created_at: r.created_at,
        })) as never[],
      );
      progress('projection + signals collection', i + n, count, started);
    }
    const stats = await startService('services/stats/dist/main.js', 4401, {
      STATS_DB: db,
      REDIS_PREFIX: `${db}:`,
      AMQP_PREFIX: `${db}.`,
      STATS_CACHE_MIN_FRESH_MS: '0',
      STATS_CACHE_TTL_MS: '600000',
    });
    const pool = new Pool(stats.url, { connections: 2 });
    const signals = naiveDb.db!.collection('signals');
    const rows: LoadResult[] = [];
    try {
      const get = async (qs: string) => {
        const res = await pool.request({
          method: 'GET',
          path: `/v1/stats${qs}`,
          headers: {
            authorization: `Bearer ${signInternalToken(SECRETS.INTERNAL_JWT_SECRET, 'stats', 'acc_bench', 60)}`,
          },
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`${qs} → ${res.statusCode} ${text.slice(0, 200)}`);
      };
      for (const [period, type] of [
        ['all', undefined],
        ['all', 'new'],
        ['24h', undefined],
        ['24h', 'new'],
      ] as const) {
        const qs = `?period=${period}${type ? `&type=${type}` : ''}`;
        const since = period === '24h' ? new Date(Date.now() - 86_400_000) : undefined;
        const match: Record<string, unknown> = {
          ...(type ? { type } : {}),
          ...(since ? { created_at: { $gt: since } } : {}),
        };
        rows.push(
          await timed(`naive: aggregate signals ${qs}`, coldN, async () => {
            await Promise.all([
              signals.aggregate([{ $match: match }, { $group: { _id: '$type', n: { $sum: 1 } } }]).toArray(),
              signals
                .aggregate([
                  { $match: { ...match, 'performance.status': 'winner' } },
                  { $group: { _id: '$type', n: { $sum: 1 } } },
                ])
                .toArray(),
              signals
                .aggregate([{ $match: match }, { $group: { _id: '$type', r: { $sum: '$performance.roi' } } }])
                .toArray(),
              signals.find(match).sort({ 'performance.roi': -1 }).limit(1).toArray(),
            ]);
          }),
        );
        rows.push(
          await timed(`cold /v1/stats${qs}`, coldN, async () => {
            await redis.incr(`${db}:stats:{statscache}:gen`);
            await get(qs);
          }),
        );
        await get(qs);
        rows.push(await timed(`warm /v1/stats${qs}`, warmN, () => get(qs)));
      }
    } finally {
      await pool.close();
      await stats.stop();
    }
    console.log(
      `\nprojection of ${count} signals; naive/cold: ${coldN} sequential requests, warm: ${warmN}\n`,
    );
    table(rows);
    console.log('');
    for (let i = 0; i < rows.length; i += 3) {
      const [naive, cold, warm] = [rows[i]!, rows[i + 1]!, rows[i + 2]!];
      console.log(
        `${cold.name.replace('cold ', '').padEnd(36)} naive/cold p50 ${(naive.p50 / cold.p50).toFixed(2)}   cold/warm p50 ${(cold.p50 / warm.p50).toFixed(0)}×   naive/warm p50 ${(naive.p50 / warm.p50).toFixed(0)}×`,
      );
    }
  } finally {
    const keys = await redis.keys(`${db}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await naiveDb.dropDatabase().catch(() => undefined);
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
