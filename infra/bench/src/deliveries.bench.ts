import { parseCliArgs, readCommandLine, storeIdCommands } from '@signal/service-kit';
import mongoose from 'mongoose';
import { Pool } from 'undici';
import {
  benchInternalToken,
  dropBrokerPrefix,
  infra,
  settle,
  startService,
  table,
  timed,
  wholeNumberOption,
  type LoadResult,
} from './harness';

/**
 * pnpm bench deliveries [--sizes 1000,10000] [--failed 20] [--requests 20]
 *
 * What one page of a subscription's delivery log costs as its history grows, on the store the
 * run command starts: for each size, one subscription's history of that many deliveries (700-byte
 * payloads, one attempt each, `--failed` of them failed and in the open-deliveries index) is
 * written to the webhooks store as the worker writes it, and the webhooks API is asked, --requests
 * times each in turn: page 1 unfiltered, page 1 of `status=failed` and page 1 of
 * `status=succeeded` (on the embedded store, paged by the wrapper's `pageIdsByLatest`), then a
 * page 10 deep by cursor. The baselines, in the same run: the unfiltered page read as a sorted
 * find and a count straight from the store (what the API did before the store paged ids itself),
 * and what `status=succeeded` folds without the wrapper's command, every delivery and every log
 * entry of the subscription (at most 3 requests each: they cost the history). Prints p50/p99 per
 * row and, per size, page 1 / the sorted find and `status=succeeded` / the fold. Then what retention's removal of the history
 * costs: its older half (deliveries, log entries, open marks) by the store's own range delete, the
 * newer half by the wrapper's `removeIdRange` as the worker's sweep does, documents a second each.
 */
const CLI = {
  name: 'deliveries bench',
  usage: 'usage: pnpm bench deliveries [--sizes 1000,10000] [--failed 20] [--requests 20]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    sizes: { type: 'string', default: '1000,10000' },
    failed: { type: 'string', default: '20' },
    requests: { type: 'string', default: '20' },
  }),
);
const failedCount = wholeNumberOption(CLI, opts, 'failed');
const requests = wholeNumberOption(CLI, opts, 'requests');
const sizes = opts.sizes.split(',').map((s) => {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--sizes: ${s} is not a whole number`);
  return n;
});

const ACCOUNT = 'acc_bench_deliveries';
const PAYLOAD = JSON.stringify({ event: 'signal.new', data: { note: 'x'.repeat(640) } });
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const crockford = (n: number, chars: number): string => {
  let out = '';
  for (let i = 0; i < chars; i++, n = Math.floor(n / 32)) out = CROCKFORD[n % 32] + out;
  return out;
};
/** A delivery id in the stored form (`dlv_` and 26 Crockford characters), one per (size, i). */
const idOf = (size: number, i: number) => `dlv_01KB${crockford(size, 8)}${crockford(i, 14)}`;

interface StoredDelivery {
  _id: string;
}

async function main() {
  const db = `bench_deliveries_${Date.now()}`;
  const conn = await mongoose.createConnection(infra().MONGO_URL, { dbName: db }).asPromise();
  const api = await startService('services/webhooks/dist/main.js', 4601, {
    WEBHOOKS_DB: db,
    AMQP_PREFIX: `${db}.`,
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    AMQP_QUEUE_TYPE: 'classic',
    // The lists are what this bench times, one account reading them back to back: not paced.
    WEBHOOK_LIST_READ_BURST_MS: '3600000',
  });
  const client = new Pool(api.url, { connections: 1 });
  const rows: LoadResult[] = [];
  const ratios: string[] = [];
  try {
    // Per request: the gateway's token lives a minute, and a run lasts longer (the cache renews it).
    const auth = () => ({ authorization: `Bearer ${benchInternalToken('webhooks', ACCOUNT)}` });
    const get = async (path: string): Promise<{ meta: { next_cursor: string | null; total: number } }> => {
      const res = await client.request({ method: 'GET', path, headers: auth() });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text}`);
      return JSON.parse(text) as { meta: { next_cursor: string | null; total: number } };
    };
    for (const size of sizes) {
      const created = await client.request({
        method: 'POST',
        path: '/v1/webhooks',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://127.0.0.1:9/bench', events: ['signal.new'] }),
      });
      const webhookId = ((await created.body.json()) as { data: { id: string } }).data.id;
      const now = Date.now();
      for (let from = 0; from < size; from += 1000) {
        const batch = Array.from({ length: Math.min(1000, size - from) }, (_, k) => from + k);
        const failed = (i: number) => i % Math.max(1, Math.floor(size / failedCount)) === 0;
        await conn.collection<StoredDelivery>('deliveries').insertMany(
          batch.map((i) => ({
            _id: idOf(size, i),
            account_id: ACCOUNT,
            webhook_id: webhookId,
            event_id: `evt_${size}_${i}`,
            event: 'signal.new',
            payload: PAYLOAD,
            status: 'pending',
            created_at: new Date(now - (size - i) * 1000),
          })),
        );
        await conn.collection<StoredDelivery>('delivery_log').insertMany(
          batch.map((i) => ({
            _id: `${idOf(size, i)}:2`,
            delivery_id: idOf(size, i),
            webhook_id: webhookId,
            seq: 2,
            kind: 'attempt',
            attempt: 1,
            status: failed(i) ? 'failed' : 'succeeded',
            next_attempt_at: null,
            at: new Date(now - (size - i) * 1000 + 50),
            started_at: new Date(now - (size - i) * 1000 + 20),
            duration_ms: 30,
            status_code: failed(i) ? 500 : 200,
            error: failed(i) ? 'http_500' : null,
          })),
        );
        const open = batch.filter(failed);
        if (open.length)
          await conn.collection<StoredDelivery>('open_deliveries').insertMany(
            open.map((i) => ({
              _id: idOf(size, i),
              webhook_id: webhookId,
              account_id: ACCOUNT,
              at: new Date(now - (size - i) * 1000 + 50),
            })),
          );
      }
      const base = `/v1/webhooks/${webhookId}/deliveries?limit=20`;
      const failedTotal = (await get(`${base}&status=failed`)).meta.total;
      let cursor: string | null = null;
      for (let page = 0; page < 9; page++)
        cursor = (await get(`${base}${cursor ? `&cursor=${cursor}` : ''}`)).meta.next_cursor;
      await settle();
      const row = async (name: string, path: string) => {
        const r = await timed(`${size} deliveries: ${name}`, requests, async () => {
          await get(path);
        });
        rows.push(r);
        return r;
      };
      const first = await row('page 1', base);
      const deep = await row('page 10 by cursor', `${base}&cursor=${cursor}`);
      const onlyFailed = await row(`status=failed (${failedTotal})`, `${base}&status=failed`);
      const succeeded = await row('status=succeeded', `${base}&status=succeeded`);
      const deliveries = conn.collection<StoredDelivery & { webhook_id: string; created_at: Date }>(
        'deliveries',
      );
      const found = await timed(
        `${size} deliveries: page 1 as a sorted find + count`,
        Math.min(requests, 3),
        async () => {
          const q = { webhook_id: webhookId };
          await Promise.all([
            deliveries
              .find(q, { projection: { payload: 0 } })
              .sort({ created_at: -1, _id: -1 })
              .limit(20)
              .toArray(),
            deliveries.countDocuments(q),
          ]);
        },
      );
      rows.push(found);
      const folded = await timed(
        `${size} deliveries: status=succeeded's reads as a fold (every delivery and log entry)`,
        Math.min(requests, 3),
        async () => {
          const q = { webhook_id: webhookId };
          await Promise.all([
            deliveries.find(q, { projection: { payload: 0 } }).toArray(),
            conn
              .collection<StoredDelivery>('delivery_log')
              .find(q, { projection: { request: 0, response: 0, exchange: 0 } })
              .toArray(),
          ]);
        },
      );
      rows.push(folded);
      // Retention's removal, by ranges of ids: the older half the store's way, the newer half the wrapper's.
      const half = Math.floor(size / 2);
      const older = { from: idOf(size, 0), below: idOf(size, half) };
      const newer = { from: idOf(size, half), below: idOf(size, size) };
      const collections = ['open_deliveries', 'deliveries', 'delivery_log'];
      let rangeDocs = 0;
      const rangeStarted = Date.now();
      for (const name of collections)
        rangeDocs += (
          await conn
            .collection<StoredDelivery>(name)
            .deleteMany({ _id: { $gte: older.from, $lt: older.below } })
        ).deletedCount;
      const rangeMs = Date.now() - rangeStarted;
      const storeIds = await storeIdCommands(conn);
      let removal = '';
      if (storeIds) {
        let ourDocs = 0;
        const ourStarted = Date.now();
        for (const name of collections)
          for (let batch = 5000; batch === 5000; ourDocs += batch)
            batch = await storeIds.removeIdRange(name, newer, 5000);
        const ourMs = Math.max(1, Date.now() - ourStarted);
        removal = `; removal ${ourDocs} documents in ${ourMs} ms (${Math.round(ourDocs / (ourMs / 1000))}/s) against the store's range delete ${rangeDocs} in ${rangeMs} ms (${Math.round(rangeDocs / (Math.max(1, rangeMs) / 1000))}/s)`;
      }
      ratios.push(
        `${size} deliveries: page 1 / sorted find p50 ${(first.p50 / found.p50).toFixed(3)}; status=succeeded / the fold's reads p50 ${(succeeded.p50 / folded.p50).toFixed(3)}; status=failed ${onlyFailed.p50.toFixed(1)} ms; page 10 by cursor ${deep.p50.toFixed(1)} ms${removal}`,
      );
    }
    console.log(`\n${requests} sequential requests per row, one connection, the webhooks API directly\n`);
    table(rows);
    console.log('');
    for (const line of ratios) console.log(line);
  } finally {
    await client.close();
    await api.stop();
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
    await dropBrokerPrefix(`${db}.`).catch(() => undefined);
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
