import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  stablePort,
  infraUrls,
  startReceiver,
  startTcpProxy,
  testBrokerPrefix,
  uniqueName,
  viaProxy,
  waitFor,
  type Receiver,
  TEST_INTERNAL_KEYS,
} from '@signal/test-kit';
import mongoose from 'mongoose';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

const WORKER = path.join(__dirname, '..', 'dist', 'worker.js');
const ACC = 'acc_faults';

function spawnWorker(env: Record<string, string>): ChildProcess {
  if (!existsSync(WORKER)) throw new Error('worker not built: run "pnpm build"');
  return spawn(process.execPath, [WORKER], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'ignore',
  });
}

/** (event, subscription) pairs seen, and whether every duplicate of a pair carried the same webhook-id. */
function coverage(receiver: Receiver) {
  const pairs = new Map<string, Set<string>>();
  for (const r of receiver.requests) {
    const key = `${JSON.parse(r.body).data.id}|${r.path}`;
    const ids = pairs.get(key) ?? new Set<string>();
    ids.add(String(r.headers['webhook-id']));
    pairs.set(key, ids);
  }
  return {
    pairs: pairs.size,
    consistentIds: [...pairs.values()].every((s) => s.size === 1),
    requests: receiver.requests.length,
  };
}

describe('webhook worker faults', () => {
  it('when the worker is SIGKILLed in the middle of 1,000 deliveries and restarted, then every (event, subscription) is delivered at least once with a stable webhook-id', async () => {
    const broker = testBrokerPrefix('wh_kill', removeBrokerPrefix);
    const dbName = uniqueName('t_wh_kill');
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 2 }));
    const api: WebhooksHarness = await startWebhooks({
      label: 'wh_kill',
      prefix: broker.prefix,
      worker: false,
      dbName,
    });
    let worker: ChildProcess | undefined;
    try {
      const subscriptions: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await request(api.url)
          .post('/v1/webhooks')
          .set(api.auth(ACC))
          .send({ url: `${receiver.url}/s${i}`, events: ['signal.new'] })
          .expect(201);
        subscriptions.push(res.body.data.id);
      }
      const env = {
        MONGO_URL: infraUrls().mongoUrl,
        WEBHOOKS_DB: dbName,
        AMQP_URL: infraUrls().amqpUrl,
        AMQP_PREFIX: broker.prefix,
        INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
        WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
        WEBHOOK_RETRY_DELAYS_MS: '200,400,600',
        WORKER_PORT: String(await stablePort()),
        WORKER_METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
      };
      worker = spawnWorker(env);
      const ready = async () =>
        (await fetch(`http://127.0.0.1:${env.WORKER_PORT}/readyz`).catch(() => undefined))?.status === 200;
      await waitFor(ready, 20_000, 100, 'the worker to be ready');
      await publishEvents(broker.prefix, 100);
      await waitFor(() => receiver.requests.length >= 250, 30_000, 20, '250 deliveries before the kill');
      worker.kill('SIGKILL');
      await new Promise((r) => worker!.once('exit', r));
      const atKill = receiver.requests.length;
      expect(atKill).toBeLessThan(1000);

      worker = spawnWorker(env);
      // A deadline only a hung run reaches: a loaded CI machine (load average ~20) took over 60 s.
      await waitFor(() => coverage(receiver).pairs === 1000, 240_000, 100, 'all 1,000 pairs');
      const c = coverage(receiver);
      expect(c.consistentIds).toBe(true);
      expect(c.requests).toBeGreaterThanOrEqual(1000);
      // The ledger: every delivery succeeded, and was POSTed no more often than it has attempts
      // recorded (an attempt the kill interrupted is recorded as such, and the next attempt
      // follows; no record is ever repeated, nor a POST made again because of bookkeeping).
      const posts = new Map<string, number>();
      for (const r of receiver.requests) {
        const id = String(r.headers['webhook-id']);
        posts.set(id, (posts.get(id) ?? 0) + 1);
      }
      for (const id of subscriptions) {
        const rows = await waitFor(
          async () => {
            const r = await request(api.url)
              .get(`/v1/webhooks/${id}/deliveries?status=succeeded&limit=100`)
              .set(api.auth(ACC))
              .expect(200);
            return r.body.meta.total === 100
              ? (r.body.data as Array<{ id: string; attempts_made: number }>)
              : undefined;
          },
          20_000,
          200,
          `100 succeeded deliveries of ${id}`,
        );
        for (const d of rows) expect(posts.get(d.id) ?? 0).toBeLessThanOrEqual(d.attempts_made);
      }
    } finally {
      worker?.kill('SIGTERM');
      await api.stop();
      await receiver.close();
      const conn = await mongoose.createConnection(infraUrls().mongoUrl, { dbName }).asPromise();
      await conn.dropDatabase();
      await conn.close();
      await broker.cleanup();
    }
  }, 420_000);

  it('when the broker connection drops mid-stream, then the worker reconnects and nothing is lost', async () => {
    const broker = testBrokerPrefix('wh_broker', removeBrokerPrefix);
    const amqp = new URL(infraUrls().amqpUrl);
    const proxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 2 }));
    const hooks = await startWebhooks({
      label: 'wh_broker',
      prefix: broker.prefix,
      env: { AMQP_URL: viaProxy(infraUrls().amqpUrl, proxy) },
    });
    try {
      for (let i = 0; i < 5; i++) {
        await request(hooks.url)
          .post('/v1/webhooks')
          .set(hooks.auth(ACC))
          .send({ url: `${receiver.url}/b${i}`, events: ['signal.new'] })
          .expect(201);
      }
      await publishEvents(broker.prefix, 60);
      await waitFor(() => receiver.requests.length >= 60, 20_000, 10, 'some deliveries');
      // Long enough for the first reconnect attempt (~200 ms) to fail too.
      proxy.cut();
      await new Promise((r) => setTimeout(r, 500));
      proxy.restore();
      await waitFor(
        () => coverage(receiver).pairs === 300,
        240_000,
        100,
        'all 300 pairs after the broker came back',
      );
      expect(coverage(receiver).consistentIds).toBe(true);
    } finally {
      proxy.restore();
      await hooks.stop();
      await proxy.close();
      await receiver.close();
      await broker.cleanup();
    }
  }, 420_000);
});
