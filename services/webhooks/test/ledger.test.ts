import { startHostileReceiver, startReceiver, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * The ledger: per delivery, POSTs received = attempts recorded ≤ 1 + 3, whatever the receiver
 * sends back. Account A's receiver answers nothing but hostile responses (NUL, invalid UTF-8,
 * odd header bytes, 3 MB, too slow, reset) while account B's answers 200: every A delivery is
 * POSTed exactly as often as it is recorded, and every B delivery exactly once, recorded succeeded.
 */
const broker = testBrokerPrefix('wh_ledger', removeBrokerPrefix);
const A = 'acc_ledger_hostile';
const B = 'acc_ledger_healthy';
const EVENTS = 24;
let hooks: WebhooksHarness;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_ledger',
    prefix: broker.prefix,
    // A timeout long against a loaded machine's scheduling: only the slow answers reach it.
    env: { WEBHOOK_RETRY_DELAYS_MS: '100,200,300', WEBHOOK_TIMEOUT_MS: '5000' },
  });
});
afterAll(async () => {
  await hooks.stop();
  await broker.cleanup();
});

interface KeptAttempt {
  status_code: number | null;
  response: { headers: Record<string, string>; body: string; body_encoding: 'text' | 'base64' } | null;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  status: string;
  attempts_made: number;
}

async function subscribe(account: string, url: string): Promise<string> {
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(account))
    .send({ url, events: ['signal.new'] })
    .expect(201);
  return res.body.data.id as string;
}

async function deliveries(account: string, id: string): Promise<DeliveryRow[]> {
  const res = await request(hooks.url)
    .get(`/v1/webhooks/${id}/deliveries?limit=100`)
    .set(hooks.auth(account))
    .expect(200);
  return res.body.data as DeliveryRow[];
}

const countBy = (ids: string[]) => {
  const m = new Map<string, number>();
  for (const id of ids) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
};

describe('the delivery ledger', () => {
  it("when account A's receiver answers only hostile responses beside B's healthy one, then A's POSTs equal its recorded attempts (at most 4 each) and each B delivery is POSTed once and recorded succeeded", async () => {
    const hostile = await startHostileReceiver({ slowMs: 7000 });
    const healthy = await startReceiver(() => ({ status: 200 }));
    try {
      const a = await subscribe(A, `${hostile.url}/a`);
      const b = [await subscribe(B, `${healthy.url}/b1`), await subscribe(B, `${healthy.url}/b2`)];
      await publishEvents(broker.prefix, EVENTS);

      const aRows = await waitFor(
        async () => {
          const rows = await deliveries(A, a);
          return rows.length === EVENTS && rows.every((d) => d.status === 'failed') ? rows : undefined;
        },
        60_000,
        200,
        "every one of A's deliveries to fail for good",
      );
      const bRows = await waitFor(
        async () => {
          const rows = (await Promise.all(b.map((id) => deliveries(B, id)))).flat();
          return rows.length === 2 * EVENTS && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
        },
        60_000,
        200,
        "every one of B's deliveries to succeed",
      );

      // A: POSTs received per delivery (by webhook-id) = attempts recorded = 4, every hostile
      // response among them.
      const aPosts = countBy(hostile.requests.map((r) => r.headers['webhook-id'] ?? ''));
      expect(new Map(aRows.map((d) => [d.id, d.attempts_made]))).toEqual(aPosts);
      expect(new Set(aRows.map((d) => d.attempts_made))).toEqual(new Set([4]));
      expect(new Set(hostile.requests.map((r) => r.response)).size).toBe(6);

      // Every response that came is kept whole enough to show (no record fell back to dropping
      // it): NUL and invalid UTF-8 as base64 of the very bytes, odd header bytes escaped; the
      // store refused nothing.
      const attempts = (
        await Promise.all(
          aRows.map(
            async (d) =>
              (
                await request(hooks.url)
                  .get(`/v1/webhooks/${a}/deliveries/${d.id}`)
                  .set(hooks.auth(A))
                  .expect(200)
              ).body.data.attempts as KeptAttempt[],
          ),
        )
      ).flat();
      const answered = attempts.filter((t) => t.status_code !== null);
      expect(answered.length).toBeGreaterThan(0);
      for (const t of answered) expect(t.response).not.toBeNull();
      const bodies = answered.map((t) =>
        t.response!.body_encoding === 'base64'
          ? Buffer.from(t.response!.body, 'base64')
          : Buffer.from(t.response!.body),
      );
      expect(bodies.some((body) => body.includes(0))).toBe(true);
      expect(answered.some((t) => t.response!.headers['$set.x'] === '1')).toBe(true);
      expect((await metrics.storeWritesRefused().get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);

      // B: as many POSTs per delivery as attempts recorded, the last succeeded, and none before it
      // failed for anything but the worker's own timeout: nothing A's receiver did repeats a B
      // POST. (On a quiet machine each is POSTed once; a machine loaded enough to keep the
      // receiver in this process from answering within WEBHOOK_TIMEOUT_MS retries it, as it must.)
      const bPosts = countBy(healthy.requests.map((r) => String(r.headers['webhook-id'])));
      expect(bPosts.size).toBe(2 * EVENTS);
      expect(new Map(bRows.map((d) => [d.id, d.attempts_made]))).toEqual(bPosts);
      const retried = bRows.filter((d) => d.attempts_made > 1);
      const bAttempts = await Promise.all(
        retried.map(
          async (d) =>
            (
              await request(hooks.url)
                .get(`/v1/webhooks/${b.find((id) => d.webhook_id === id)}/deliveries/${d.id}`)
                .set(hooks.auth(B))
                .expect(200)
            ).body.data.attempts as Array<{ error: string | null }>,
        ),
      );
      for (const attempts of bAttempts) {
        expect(attempts.slice(0, -1).map((t) => t.error)).toEqual(attempts.slice(0, -1).map(() => 'timeout'));
        expect(attempts.at(-1)?.error).toBeNull();
      }
    } finally {
      await hostile.close();
      await healthy.close();
    }
  }, 120_000);
});
