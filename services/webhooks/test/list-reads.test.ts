import { removeBrokerPrefix } from '@signal/messaging';
import { testBrokerPrefix } from '@signal/test-kit';
import request from 'supertest';
import type { DeliveryDocument } from '../src/domain/records';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * A delivery list's cost follows the subscription's history (docs/benchmarks.md), and the store
 * is shared: an account has at most WEBHOOK_LIST_READS_PER_ACCOUNT lists in progress at once.
 */
const broker = testBrokerPrefix('wh_list_reads', removeBrokerPrefix);
const ACC = 'acc_list_reads';
let hooks: WebhooksHarness;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_list_reads',
    prefix: broker.prefix,
    worker: false,
    env: { WEBHOOK_LIST_READS_PER_ACCOUNT: '1' },
  });
});
afterAll(async () => {
  await hooks.stop();
  await broker.cleanup();
});

it('when an account asks for more delivery lists at once than it may, then the others get 429 with Retry-After, and lists read one at a time all succeed', async () => {
  const created = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url: 'http://127.0.0.1:9/h', events: ['signal.new'] })
    .expect(201);
  const id = created.body.data.id as string;
  // A history long enough that each list takes a while to read on any store.
  const payload = JSON.stringify({ filler: 'x'.repeat(600) });
  const now = Date.now();
  const docs: DeliveryDocument[] = Array.from({ length: 2000 }, (_, i) => ({
    _id: `dlv_${String(i).padStart(26, '0')}`,
    account_id: ACC,
    webhook_id: id,
    event_id: `evt_${i}`,
    event: 'signal.new',
    payload,
    status: 'failed',
    created_at: new Date(now - i * 1000),
  }));
  expect((await hooks.deps.repository.insertDeliveries(docs)).size).toBe(0);

  const list = () => request(hooks.url).get(`/v1/webhooks/${id}/deliveries?limit=5`).set(hooks.auth(ACC));
  const atOnce = await Promise.all([list(), list(), list(), list()]);
  const statuses = atOnce.map((r) => r.status).sort();
  expect(statuses).toContain(200);
  expect(statuses).toContain(429);
  expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  const refused = atOnce.find((r) => r.status === 429)!;
  expect(refused.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: 1 });
  expect(refused.headers['retry-after']).toBe('1');
  for (const r of atOnce.filter((x) => x.status === 200)) expect(r.body.meta.total).toBe(2000);

  // Each place is given back: one at a time, every list is read.
  for (let i = 0; i < 3; i++) expect((await list()).status).toBe(200);
  // Another account's list is its own.
  await request(hooks.url).get(`/v1/webhooks/${id}/deliveries`).set(hooks.auth('acc_other')).expect(404);
});
