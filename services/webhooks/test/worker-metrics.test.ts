import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  infraUrls,
  stablePorts,
  startReceiver,
  startTcpProxy,
  testBrokerPrefix,
  uniqueName,
  viaProxy,
  waitFor,
  TEST_INTERNAL_KEYS,
} from '@signal/test-kit';
import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import mongoose from 'mongoose';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks } from './webhooks-harness';

const WORKER = path.join(__dirname, '..', 'dist', 'worker.js');

/** The `queue_messages` samples of a scrape: `queue|kind` → messages. */
function queueDepths(text: string): Map<string, number> {
  const depths = new Map<string, number>();
  for (const m of text.matchAll(/^queue_messages\{queue="([^"]+)",kind="([^"]+)"\} (\d+)$/gm))
    depths.set(`${m[1]}|${m[2]}`, Number(m[3]));
  return depths;
}

describe("the worker's metrics while the broker stops answering", () => {
  it('when the broker holds every answer, then a scrape still answers with the depths last read, and fresh ones once it answers again', async () => {
    if (!existsSync(WORKER)) throw new Error('worker not built: run "pnpm build"');
    const broker = testBrokerPrefix('wh_metrics', removeBrokerPrefix);
    const amqp = new URL(infraUrls().amqpUrl);
    const proxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    const dbName = uniqueName('t_wh_metrics');
    const [healthPort, metricsPort] = await stablePorts(2);
    const worker: ChildProcess = spawn(process.execPath, [WORKER], {
      env: {
        PATH: process.env.PATH ?? '',
        MONGO_URL: infraUrls().mongoUrl,
        WEBHOOKS_DB: dbName,
        AMQP_URL: viaProxy(infraUrls().amqpUrl, proxy),
        AMQP_PREFIX: broker.prefix,
        INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
        WORKER_PORT: String(healthPort),
        WORKER_METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'silent',
      },
      stdio: 'ignore',
    });
    // A hang guard only: without it, a scrape that waits on a silent broker never ends.
    const scrape = async () => {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
        signal: AbortSignal.timeout(60_000),
      });
      return { status: res.status, text: await res.text() };
    };
    const lane0 = `${broker.prefix}webhooks.deliveries.lane.0|ready`;
    const shared = `${broker.prefix}webhooks.deliveries|dead`;
    const cascade = `${broker.prefix}webhooks.delay.quorum|delayed`;
    try {
      const ready = async () =>
        (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200;
      await waitFor(ready, 30_000, 100, 'the worker to be ready');
      // Every consumer's queues are read (its own, its lanes, their retry and dead queues), and
      // the delay cascade; a scrape reports what the broker answered within its wait.
      let before = new Map<string, number>();
      await waitFor(
        async () => {
          before = queueDepths((await scrape()).text);
          return [lane0, shared, cascade].every((key) => before.has(key));
        },
        30_000,
        200,
        'the depths',
      );
      expect([before.get(lane0), before.get(shared), before.get(cascade)]).toEqual([0, 0, 0]);

      proxy.stall();
      const held = await scrape();
      expect(held.status).toBe(200);
      expect(Object.fromEntries(queueDepths(held.text))).toMatchObject(Object.fromEntries(before));
      // The rest of the scrape is there too.
      expect(held.text).toMatch(/^process_cpu_seconds_total\{service="webhooks-worker"\} /m);
      // A second scrape while the first one's questions are still unanswered answers as well.
      const again = await scrape();
      expect(again.status).toBe(200);
      expect(queueDepths(again.text).get(lane0)).toBe(0);

      proxy.resume();
      const after = queueDepths((await scrape()).text);
      expect(after.get(lane0)).toBe(0);
    } finally {
      proxy.resume();
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
      await proxy.close();
      await broker.cleanup();
      const conn = await mongoose.createConnection(infraUrls().mongoUrl, { dbName }).asPromise();
      await conn.dropDatabase().catch(() => undefined);
      await conn.close();
    }
  }, 180_000);

  it('when an attempt fails and its retry waits, then the depths count it as delayed until it is due', async () => {
    const broker = testBrokerPrefix('wh_metrics_delayed', removeBrokerPrefix);
    const failing = await startReceiver(() => ({ status: 500 }));
    const hooks = await startWebhooks({
      label: 'wh_metrics_delayed',
      prefix: broker.prefix,
      env: { WEBHOOK_RETRY_DELAYS_MS: '600000' },
    });
    const delayed = async () =>
      (await metrics.queueDepth().get()).values.find(
        (v) => v.labels.queue === `${broker.prefix}webhooks.delay.quorum` && v.labels.kind === 'delayed',
      )?.value;
    try {
      // A scrape reports what the broker answered within its wait: the first may not have it yet.
      await waitFor(async () => (await delayed()) === 0, 30_000, 100, 'the cascade read empty');
      await request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth('acc_metrics_delayed'))
        .send({ url: `${failing.url}/fails`, events: ['signal.new'] })
        .expect(201);
      await publishEvents(broker.prefix, 3);
      await waitFor(async () => (await delayed()) === 3, 30_000, 100, 'three retries waiting');
      expect(failing.requests.length).toBe(3);
    } finally {
      await hooks.stop();
      await failing.close();
      await broker.cleanup();
    }
  }, 120_000);
});
