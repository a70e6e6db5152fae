import { removeBrokerPrefix } from '@signal/messaging';
import {
  TEST_INTERNAL_KEYS,
  infraUrls,
  stablePort,
  startHostileReceiver,
  startReceiver,
  testBrokerPrefix,
  uniqueName,
  waitFor,
} from '@signal/test-kit';
import request from 'supertest';
import { publishEvents } from '../services/webhooks/test/bus-events';
import { startWebhooks, type WebhooksHarness } from '../services/webhooks/test/webhooks-harness';
import { isReady, runBuilt, type Running } from './built-services';

/**
 * The delivery ledger on the deployed worker (its built process, its run defaults but short
 * retries): account A's receiver answers only hostile responses (NUL, invalid UTF-8, odd header
 * bytes, 3 MB, too slow, reset) while account B's answers 200. Per A delivery, POSTs received =
 * attempts recorded ≤ 1 + 3; per B delivery POSTs = attempts recorded, the last succeeded:
 * one, unless the worker saw B's answer come after its limit (then those attempts are timeouts).
 */
const A = 'acc_sys_ledger_hostile';
const B = 'acc_sys_ledger_healthy';
const EVENTS = 30;

interface Row {
  id: string;
  webhook_id: string;
  status: string;
  attempts_made: number;
}

const countBy = (ids: string[]) => {
  const m = new Map<string, number>();
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
};

describe('the delivery ledger across accounts, on the built worker', () => {
  it("when A's receiver is hostile and B's healthy, then A's POSTs equal its recorded attempts (≤ 4 each) and B's too, each succeeded, a second POST only after a timeout", async () => {
    const broker = testBrokerPrefix('sys_ledger', removeBrokerPrefix);
    const dbName = uniqueName('t_sys_ledger');
    const hostile = await startHostileReceiver({ slowMs: 8000 });
    const healthy = await startReceiver(() => ({ status: 200 }));
    const api: WebhooksHarness = await startWebhooks({
      label: 'sys_ledger',
      prefix: broker.prefix,
      worker: false,
      dbName,
    });
    let worker: Running | undefined;
    try {
      const port = await stablePort();
      worker = runBuilt('services/webhooks/dist/worker.js', {
        MONGO_URL: infraUrls().mongoUrl,
        WEBHOOKS_DB: dbName,
        AMQP_URL: infraUrls().amqpUrl,
        AMQP_PREFIX: broker.prefix,
        INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
        WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
        WEBHOOK_RETRY_DELAYS_MS: '200,400,600',
        WORKER_PORT: String(port),
        WORKER_METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
      });
      await waitFor(() => isReady(port), 30_000, 100, 'the worker to be ready');
      const subscribe = async (account: string, url: string) =>
        (
          await request(api.url)
            .post('/v1/webhooks')
            .set(api.auth(account))
            .send({ url, events: ['signal.new'] })
            .expect(201)
        ).body.data.id as string;
      const rowsOf = async (account: string, id: string) =>
        (
          await request(api.url)
            .get(`/v1/webhooks/${id}/deliveries?limit=100`)
            .set(api.auth(account))
            .expect(200)
        ).body.data as Row[];
      const a = await subscribe(A, `${hostile.url}/a`);
      const b = [await subscribe(B, `${healthy.url}/b1`), await subscribe(B, `${healthy.url}/b2`)];
      await publishEvents(broker.prefix, EVENTS);

      const aRows = await waitFor(
        async () => {
          const rows = await rowsOf(A, a);
          return rows.length === EVENTS && rows.every((d) => d.status === 'failed') ? rows : undefined;
        },
        90_000,
        250,
        "every one of A's deliveries to fail for good",
      );
      const bRows = await waitFor(
        async () => {
          const rows = (await Promise.all(b.map((id) => rowsOf(B, id)))).flat();
          return rows.length === 2 * EVENTS && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
        },
        60_000,
        250,
        "every one of B's deliveries to succeed",
      );

      const aPosts = countBy(hostile.requests.map((r) => r.headers['webhook-id'] ?? ''));
      expect(new Map(aRows.map((d) => [d.id, d.attempts_made]))).toEqual(aPosts);
      for (const n of aPosts.values()) expect(n).toBeLessThanOrEqual(4);
      expect(new Set(hostile.requests.map((r) => r.response)).size).toBe(6);

      const bPosts = countBy(healthy.requests.map((r) => String(r.headers['webhook-id'])));
      expect(new Set(bRows.map((d) => d.id))).toEqual(new Set(bPosts.keys()));
      // Every POST B received is an attempt on record: none repeated by a retried write (the
      // shared-fate bug this file guards made B's POSTs outnumber its recorded attempts).
      expect(new Map(bRows.map((d) => [d.id, d.attempts_made]))).toEqual(bPosts);
      // One POST each, unless the worker saw the answer come after its limit: on a saturated CI
      // machine the in-process receiver's 200 can (once in a run seen: a second POST). At least
      // once is the contract; then every attempt before the last is a timeout on record.
      const repeated = bRows.filter((d) => d.attempts_made > 1);
      for (const d of repeated) {
        const detail = (
          await request(api.url)
            .get(`/v1/webhooks/${d.webhook_id}/deliveries/${d.id}`)
            .set(api.auth(B))
            .expect(200)
        ).body.data as { attempts: { error: string | null }[] };
        expect(detail.attempts.map((t) => t.error)).toEqual([
          ...Array<string>(d.attempts_made - 1).fill('timeout'),
          null,
        ]);
      }
    } finally {
      worker?.child.kill('SIGTERM');
      await worker?.exited;
      await api.deps.mongo.dropDatabase().catch(() => undefined);
      await api.stop();
      await hostile.close();
      await healthy.close();
      await broker.cleanup();
    }
  }, 180_000);
});
