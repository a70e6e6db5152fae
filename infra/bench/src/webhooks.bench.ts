import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { connect } from 'amqplib';
import { newId } from '@signal/service-kit';
import { Pool, request } from 'undici';
import { arg, benchInternalToken, infra, startService } from './harness';

/**
 * pnpm bench webhooks [--rate 100] [--seconds 10] [--subscribers 10]
 * Events published at a steady rate, fanned out to N local receivers by the worker; prints
 * deliveries/s and event-to-delivery latency beside the raw baseline of POSTing the same
 * receivers directly with undici at the same rate, in the same run.
 */
interface Receipt {
  at: number;
}

async function receivers(
  n: number,
  seen: Map<string, Receipt[]>,
): Promise<{ urls: string[]; close(): Promise<void> }> {
  const servers: Server[] = [];
  const urls: string[] = [];
  for (let i = 0; i < n; i++) {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const key = String(
          req.headers['x-bench-event'] ?? (JSON.parse(body) as { data: { id: string } }).data.id,
        );
        const list = seen.get(key) ?? [];
        list.push({ at: Date.now() });
        seen.set(key, list);
        res.writeHead(200).end();
      });
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
  }
  return {
    urls,
    close: async () => {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}

function stats(latencies: number[], deliveries: number, spanMs: number) {
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { perSecond: deliveries / (spanMs / 1000), p50: q(0.5), p99: q(0.99), count: deliveries };
}

async function main() {
  const rate = arg('rate', 100);
  const seconds = arg('seconds', 10);
  const subscribers = arg('subscribers', 10);
  const total = rate * seconds;
  const db = `bench_webhooks_${Date.now()}`;
  const prefix = `${db}.`;
  const env = {
    WEBHOOKS_DB: db,
    AMQP_PREFIX: prefix,
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    WEBHOOK_WORKER_PREFETCH: '300',
    WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '50',
    AMQP_QUEUE_TYPE: 'classic',
  };
  const api = await startService('services/webhooks/dist/main.js', 4501, env);
  const worker = await startService('services/webhooks/dist/worker.js', 4502, env);
  const seen = new Map<string, Receipt[]>();
  const recv = await receivers(subscribers, seen);
  const conn = await connect(infra().AMQP_URL);
  const ch = await conn.createConfirmChannel();
  try {
    for (const url of recv.urls) {
      const res = await request(`${api.url}/v1/webhooks`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${benchInternalToken('webhooks', 'acc_bench')}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ url, events: ['signal.new'] }),
      });
      await res.body.text();
      if (res.statusCode !== 201) throw new Error(`subscription: ${res.statusCode}`);
    }
    const exchange = `${prefix}signal.events`;
    const body = (id: string, sig: string) => ({
      id,
      name: 'signal.new',
      occurred_at: new Date().toISOString(),
      signal: {
        id: sig,
        token: {
          symbol: 'B',
          name: 'Bench',
          contract: 'So1anaBenchBench0001pump',
          age_hours: 1,
          dex_paid: true,
          socials: { twitter: null, telegram: null, website: null },
        },
        metrics: { mcap_entry: 1, mcap_current: 1, volume_24h: 1, holders: 1, liquidity: 1, mcap_ath: 1 },
        performance: { roi: 0, ath_roi: 0, status: 'active', time_to_ath_hours: 0 },
        type: 'new',
        is_premium: false,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
        version: 1,
      },
    });

    // Through the system: publish at a steady rate, measure until every delivery arrived.
    const published = new Map<string, number>();
    const start = Date.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / rate;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const sig = newId('sig');
      const e = body(newId('evt'), sig);
      published.set(sig, Date.now());
      ch.publish(exchange, 'signal.new', Buffer.from(JSON.stringify(e)), {
        messageId: e.id,
        persistent: true,
      });
    }
    await ch.waitForConfirms();
    const deadline = Date.now() + 180_000;
    const delivered = () =>
      [...published.keys()].reduce((n, k) => n + Math.min(subscribers, seen.get(k)?.length ?? 0), 0);
    while (delivered() < total * subscribers && Date.now() < deadline) {
      process.stderr.write(`\rdelivered ${delivered()}/${total * subscribers}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    process.stderr.write('\n');
    const sysLat: number[] = [];
    let last = start;
    for (const [sig, at] of published)
      for (const r of seen.get(sig) ?? []) {
        sysLat.push(r.at - at);
        last = Math.max(last, r.at);
      }
    const system = stats(sysLat, sysLat.length, last - start);

    // Baseline: the same receivers POSTed directly with undici at the same rate.
    const pools = recv.urls.map((u) => new Pool(new URL(u).origin, { connections: 16 }));
    const baseLat: number[] = [];
    const bStart = Date.now();
    const inflight: Promise<void>[] = [];
    const payload = JSON.stringify(body('evt_x', 'sig_x'));
    for (let i = 0; i < total; i++) {
      const due = bStart + (i * 1000) / rate;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const key = `base_${i}_${randomBytes(3).toString('hex')}`;
      const t0 = Date.now();
      for (const p of pools) {
        inflight.push(
          p
            .request({
              method: 'POST',
              path: '/hook',
              headers: { 'content-type': 'application/json', 'x-bench-event': key },
              body: payload,
            })
            .then(async (r) => {
              await r.body.text();
              baseLat.push(Date.now() - t0);
            }),
        );
      }
    }
    await Promise.all(inflight);
    const baseline = stats(baseLat, baseLat.length, Date.now() - bStart);
    await Promise.all(pools.map((p) => p.close()));

    console.log(
      `\n${rate} events/s × ${seconds}s × ${subscribers} subscribers = ${total * subscribers} deliveries; worker, API, database, broker, receivers and load share 2 cores\n`,
    );
    const line = (name: string, s: ReturnType<typeof stats>) =>
      console.log(
        `${name.padEnd(44)} ${s.perSecond.toFixed(0).padStart(10)} ${s.p50.toFixed(0).padStart(8)} ${s.p99.toFixed(0).padStart(8)} ${String(s.count).padStart(8)}`,
      );
    console.log(
      `${'path'.padEnd(44)} ${'deliv/s'.padStart(10)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'count'.padStart(8)}`,
    );
    line('signed delivery through queue + worker', system);
    line('baseline: direct undici POST', baseline);
    console.log(
      `\nratio system/baseline deliveries/s: ${(system.perSecond / baseline.perSecond).toFixed(2)}; p99 ${system.p99.toFixed(0)} ms vs ${baseline.p99.toFixed(0)} ms (target ≥ 1000/s and p99 < 250 ms at 100 events/s × 10)`,
    );
  } finally {
    await conn.close();
    await recv.close();
    await worker.stop();
    await api.stop();
    const m = await (
      await import('mongoose')
    ).default
      .createConnection(infra().MONGO_URL, { dbName: db })
      .asPromise();
    await m.dropDatabase();
    await m.close();
    const c2 = await connect(infra().AMQP_URL);
    const ch2 = await c2.createChannel();
    ch2.on('error', () => undefined);
    for (const q of ['webhooks.signal-events', 'webhooks.deliveries'])
      for (const s of ['', '.retry', '.dead'])
        await ch2.deleteQueue(`${prefix}${q}${s}`).catch(() => undefined);
    for (let i = 0; i <= 3; i++)
      await ch2.deleteQueue(`${prefix}webhooks.deliveries.delay.${i}`).catch(() => undefined);
    await ch2.deleteExchange(`${prefix}signal.events`).catch(() => undefined);
    await c2.close().catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
