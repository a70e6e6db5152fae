import { removeBrokerPrefix } from '@signal/messaging';
import { holdStoreTables, testBrokerPrefix } from '@signal/test-kit';
import request from 'supertest';
import type { DeliveryDocument } from '../src/domain/records';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * A delivery list's cost follows the subscription's history (docs/benchmarks.md), and the store
 * is shared: an account has at most WEBHOOK_LIST_READS_PER_ACCOUNT lists in progress at once.
 */
const ACC = 'acc_list_reads';
// The count alone: the time a list takes never holds the next here (below, it does).
const countBound = apiFor('wh_list_reads', {
  WEBHOOK_LIST_READS_PER_ACCOUNT: '1',
  WEBHOOK_LIST_READ_BURST_MS: '600000',
});

/**
 * A webhooks API of its own with `env` for a block's tests: started before them and stopped after;
 * `api()` is it, `prefix` its broker names'.
 */
function apiFor(label: string, env: Record<string, string>) {
  const names = testBrokerPrefix(label, removeBrokerPrefix);
  let started: WebhooksHarness | undefined;
  beforeAll(async () => {
    started = await startWebhooks({ label, prefix: names.prefix, worker: false, env });
  });
  afterAll(async () => {
    await started?.stop();
    await names.cleanup();
  });
  const api = (): WebhooksHarness => {
    if (!started) throw new Error(`${label} has not started`);
    return started;
  };
  return { api, prefix: names.prefix };
}

/** Deliveries made by `longHistory` so far: their ids are unique across the file's stores. */
let made = 0;

/** A subscription of `account` with a history long enough that each list takes a while to read on any store. */
async function longHistory(h: WebhooksHarness, account: string, size: number): Promise<string> {
  const created = await request(h.url)
    .post('/v1/webhooks')
    .set(h.auth(account))
    .send({ url: 'http://127.0.0.1:9/h', events: ['signal.new'] })
    .expect(201);
  const id = created.body.data.id as string;
  const payload = JSON.stringify({ filler: 'x'.repeat(600) });
  const now = Date.now();
  const docs: DeliveryDocument[] = Array.from({ length: size }, (_, i) => ({
    _id: `dlv_${String(made + i).padStart(26, '0')}`,
    account_id: account,
    webhook_id: id,
    event_id: `evt_${account}_${i}`,
    event: 'signal.new',
    payload,
    status: 'failed',
    created_at: new Date(now - i * 1000),
  }));
  made += size;
  expect((await h.deps.repository.insertDeliveries(docs)).size).toBe(0);
  return id;
}

it('when an account asks for more delivery lists at once than it may, then the others get 429 with Retry-After, and lists read one at a time all succeed', async () => {
  const hooks = countBound.api();
  const id = await longHistory(hooks, ACC, 2000);

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

describe('the store time of an account’s lists', () => {
  // No burst, and 10 ms paid back a second: one list's time holds the account's next.
  const pacedEnv = { WEBHOOK_LIST_READ_MS_PER_SECOND: '10', WEBHOOK_LIST_READ_BURST_MS: '0' };
  const { api, prefix } = apiFor('wh_list_time', pacedEnv);

  it('when an account’s lists took the store time it may have, then its next is 429 with the wait its time takes to pay back, and another account’s list is read', async () => {
    const paced = api();
    const heavy = await longHistory(paced, 'acc_time_heavy', 500);
    const light = await longHistory(paced, 'acc_time_light', 5);
    const list = (account: string, id: string) =>
      request(paced.url).get(`/v1/webhooks/${id}/deliveries?limit=5`).set(paced.auth(account));
    expect((await list('acc_time_heavy', heavy)).status).toBe(200);
    const refused = await list('acc_time_heavy', heavy);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refused.body.error.message).toMatch(
      /^This account's delivery lists took more of the store's time than they may lately \(their cost follows the history\): retry after \d+ s\.$/,
    );
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.body.error.retry_after).toBe(Number(refused.headers['retry-after']));
    const other = await list('acc_time_light', light);
    expect(other.status).toBe(200);
    expect(other.body.meta.total).toBe(5);
  });

  it('when an account reads through two API processes on one store, then the second process refuses what the first one’s read took', async () => {
    const paced = api();
    const second = await startWebhooks({
      label: 'wh_list_time_second',
      prefix,
      worker: false,
      dbName: paced.config.WEBHOOKS_DB,
      env: pacedEnv,
    });
    try {
      const heavy = await longHistory(paced, 'acc_time_replicas', 500);
      const list = (h: WebhooksHarness) =>
        request(h.url).get(`/v1/webhooks/${heavy}/deliveries?limit=5`).set(h.auth('acc_time_replicas'));
      expect((await list(paced)).status).toBe(200);
      // Kept per process, the second one's budget was untouched and it read (a replica each gave
      // an account the rate again).
      const refused = await list(second);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      await second.stop();
    }
  });
});

describe('the time limit of a list’s read', () => {
  const { api } = apiFor('wh_list_max', {
    WEBHOOK_LIST_READ_MAX_MS: '300',
    WEBHOOK_LIST_READ_BURST_MS: '600000',
  });

  it('when the store does not finish a list’s read within WEBHOOK_LIST_READ_MAX_MS, then the list is 504 GATEWAY_TIMEOUT, and read once the store answers', async () => {
    const limited = api();
    const id = await longHistory(limited, 'acc_list_max', 30);
    const list = (query: string) =>
      request(limited.url).get(`/v1/webhooks/${id}/deliveries${query}`).set(limited.auth('acc_list_max'));
    // The deliveries and their log wait on a lock, as on a store too slow to answer; the
    // subscription itself is read as ever.
    const { deliveries, deliveryLog } = limited.deps.collections;
    const held = await holdStoreTables(limited.config.WEBHOOKS_DB, [
      deliveries.collectionName,
      deliveryLog.collectionName,
    ]);
    if (!held) return;
    try {
      for (const query of ['', '?status=succeeded']) {
        const stopped = await list(query);
        expect(stopped.status).toBe(504);
        expect(stopped.body).toMatchObject({
          success: false,
          error: {
            code: 'GATEWAY_TIMEOUT',
            message: 'The database did not finish this read within its time limit.',
          },
        });
      }
    } finally {
      await held.release();
    }
    const read = await list('?limit=5');
    expect(read.status).toBe(200);
    expect(read.body.meta.total).toBe(30);
    expect((await list('?status=succeeded')).body.meta.total).toBe(0);
  });
});
