import { sendOnceOver, startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';

/**
 * Retries through the delay cascade: one receiver's hour-long Retry-After never delays another
 * subscription's retry, and a change of the delay setting with retries in flight delays nothing
 * past its due time. Plus: idempotent subscription creation, and ids that cannot exist refused
 * without the store.
 */
const broker = testBrokerPrefix('wh_retries', removeBrokerPrefix);
let hooks: WebhooksHarness;
const receivers: Receiver[] = [];
const ACC = 'acc_retries';

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_retries',
    prefix: broker.prefix,
    env: { WEBHOOK_RETRY_DELAYS_MS: '1500,1500,1500', WEBHOOK_MAX_RETRY_AFTER_MS: '3600000' },
  });
});
afterAll(async () => {
  await hooks.stop();
  for (const r of receivers) await r.close();
  await broker.cleanup();
});

async function receiver(behaviour: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(behaviour);
  receivers.push(r);
  return r;
}

async function subscribe(url: string, h: WebhooksHarness = hooks) {
  const res = await request(h.url)
    .post('/v1/webhooks')
    .set(h.auth(ACC))
    .send({ url, events: ['signal.new'] })
    .expect(201);
  return res.body.data.id as string;
}

const sendTest = (id: string, h: WebhooksHarness = hooks) =>
  request(h.url).post(`/v1/webhooks/${id}/test`).set(h.auth(ACC)).expect(202);

describe('retries in the delay cascade', () => {
  it("when one receiver responds 429 Retry-After: 3600, then another subscription's retry still comes on time", async () => {
    const throttling = await receiver(() => ({ status: 429, headers: { 'retry-after': '3600' } }));
    let calls = 0;
    const flaky = await receiver(() => ({ status: ++calls === 1 ? 500 : 200 }));
    const throttled = await subscribe(`${throttling.url}/hook`);
    await sendTest(throttled);
    await waitFor(() => throttling.requests.length === 1, 10_000, 20, 'the throttled first attempt');

    const other = await subscribe(`${flaky.url}/hook`);
    await sendTest(other);
    await waitFor(() => flaky.requests.length === 2, 10_000, 20, 'the other subscription to be retried');
    const gap = flaky.requests[1]!.receivedAt - flaky.requests[0]!.receivedAt;
    // Due after 1.5 s ±20 %: never early; that it came at all, while the throttled retry waits
    // its hour, shows the hour did not hold it back.
    expect(gap).toBeGreaterThanOrEqual(1200 - 20);
    expect(throttling.requests).toHaveLength(1);
    const log = await request(hooks.url)
      .get(`/v1/webhooks/${throttled}/deliveries`)
      .set(hooks.auth(ACC))
      .expect(200);
    const nextAt = Date.parse(log.body.data[0].next_attempt_at);
    expect(nextAt - Date.now()).toBeGreaterThan(3_500_000);
  });

  it('when the delay setting changes with retries in flight, then no retry waits past its due time', async () => {
    // A worker with 15-minute retries schedules one; a worker with 1-second retries another.
    const slowBroker = testBrokerPrefix('wh_retries_change', removeBrokerPrefix);
    const slowFirst = await startWebhooks({
      label: 'wh_retries_change',
      prefix: slowBroker.prefix,
      env: { WEBHOOK_RETRY_DELAYS_MS: '900000' },
    });
    const failing = await receiver(() => ({ status: 500 }));
    let calls = 0;
    const recovering = await receiver(() => ({ status: ++calls === 1 ? 500 : 200 }));
    try {
      const long = await subscribe(`${failing.url}/hook`, slowFirst);
      await sendTest(long, slowFirst);
      await waitFor(() => failing.requests.length === 1, 10_000, 20, 'the first failure');
      await slowFirst.stopWorker();
      const fastSecond = await startWebhooks({
        label: 'wh_retries_change2',
        prefix: slowBroker.prefix,
        dbName: slowFirst.config.WEBHOOKS_DB,
        env: { WEBHOOK_RETRY_DELAYS_MS: '1000' },
      });
      try {
        const short = await subscribe(`${recovering.url}/hook`, fastSecond);
        await sendTest(short, fastSecond);
        await waitFor(() => recovering.requests.length === 2, 10_000, 20, 'the short retry');
        // The 1 s retry came (the wait above is far below the 15 minutes it would have taken
        // behind the other), and the 15-minute one has not.
        expect(failing.requests).toHaveLength(1);
      } finally {
        await fastSecond.stop();
      }
    } finally {
      await slowFirst.stop();
      await slowBroker.cleanup();
    }
  });
});

describe('the open-deliveries index', () => {
  const heldOpenEntries = async () =>
    (await metrics.storeWritesAlreadyHeld().get()).values
      .filter((v) => v.labels.collection === 'open_deliveries')
      .reduce((n, v) => n + v.value, 0);

  it('when a delivery fails every attempt, then its open entry is written once (no insert meets one stored) and recover still finds it', async () => {
    const failing = await receiver(() => ({ status: 500 }));
    const id = await subscribe(`${failing.url}/always-500`);
    const since = new Date(Date.now() - 1000).toISOString();
    const heldBefore = await heldOpenEntries();
    const deliveryId = (await sendTest(id)).body.data.id as string;
    await waitFor(
      async () => {
        const res = await request(hooks.url)
          .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
          .set(hooks.auth(ACC))
          .expect(200);
        return res.body.data.status === 'failed';
      },
      20_000,
      100,
      'the delivery to fail for good',
    );
    expect(failing.requests).toHaveLength(4);
    // Four failed attempts, one entry: the retries' failures wrote none again.
    expect((await heldOpenEntries()) - heldBefore).toBe(0);
    const recovered = await request(hooks.url)
      .post(`/v1/webhooks/${id}/recover`)
      .set(hooks.auth(ACC))
      .send({ since })
      .expect(202);
    expect(recovered.body.data.queued).toBe(1);
  });
});

describe('idempotent subscription creation', () => {
  it('when a create is retried with the same Idempotency-Key, then one subscription exists and the same one comes back; another body is 409', async () => {
    const body = { url: 'http://127.0.0.1:9/idem', events: ['signal.new'] };
    const key = `idem-${Date.now()}`;
    const [a, b, c] = await Promise.all(
      [1, 2, 3].map(() =>
        sendOnceOver(() =>
          request(hooks.url)
            .post('/v1/webhooks')
            .set(hooks.auth('acc_idem'))
            .set('Idempotency-Key', key)
            .send(body),
        ),
      ),
    );
    const ids = new Set([a!, b!, c!].map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
    expect([a!, b!, c!].map((r) => r.status).sort()).toEqual([200, 200, 201]);
    expect(new Set([a!, b!, c!].map((r) => r.body.data.secret)).size).toBe(1);
    const list = await request(hooks.url).get('/v1/webhooks').set(hooks.auth('acc_idem')).expect(200);
    expect(list.body.data).toHaveLength(1);
    const conflict = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth('acc_idem'))
      .set('Idempotency-Key', key)
      .send({ ...body, events: ['signal.winner'] })
      .expect(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    // The same key under another account is another request.
    await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth('acc_idem_b'))
      .set('Idempotency-Key', key)
      .send(body)
      .expect(201);
  });

  it('when the webhook an Idempotency-Key created was deleted, then a repeat is a 409 saying so at once, not "still being processed"', async () => {
    const body = { url: 'http://127.0.0.1:9/idem-deleted', events: ['signal.new'] };
    const key = `idem-deleted-${Date.now()}`;
    const send = () =>
      request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth('acc_idem_del'))
        .set('Idempotency-Key', key)
        .send(body);
    const first = await send().expect(201);
    const id = first.body.data.id as string;
    await request(hooks.url).delete(`/v1/webhooks/${id}`).set(hooks.auth('acc_idem_del')).expect(200);
    // The first request was a minute ago: whatever it did is long over.
    await hooks.deps.collections.idempotency.updateOne(
      { _id: `acc_idem_del:${key}` },
      { $set: { expires_at: new Date(Date.now() + 23 * 3_600_000) } },
    );

    // CONFLICT naming the deletion, not the "still being processed" response given after waiting.
    const repeat = await send().expect(409);
    expect(repeat.body.error.code).toBe('CONFLICT');
    expect(repeat.body.error.message).toBe(
      `The webhook this Idempotency-Key created (${id}) has been deleted; use a new Idempotency-Key to create another.`,
    );
    await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth('acc_idem_del'))
      .set('Idempotency-Key', `${key}-new`)
      .send(body)
      .expect(201);
  });
});

describe('ids and paging that cannot exist', () => {
  it.each([
    ['GET', '/v1/webhooks/%00', 'Webhook \uFFFD was not found.'],
    ['HEAD', '/v1/webhooks/%00', ''],
    ['DELETE', '/v1/webhooks/%00', 'Webhook \uFFFD was not found.'],
    ['GET', '/v1/webhooks/wh_nope', 'Webhook wh_nope was not found.'],
    ['GET', `/v1/webhooks/wh_${'Z'.repeat(300)}`, `Webhook wh_${'Z'.repeat(77)}… was not found.`],
    ['GET', '/v1/webhooks/wh_01J00000000000000000000000/deliveries/%00', 'Delivery \uFFFD was not found.'],
    // An id of the right form that names nothing says it in the same words.
    [
      'GET',
      '/v1/webhooks/wh_01J00000000000000000000000',
      'Webhook wh_01J00000000000000000000000 was not found.',
    ],
  ])('when %s %s, then 404 with the envelope, the id quoted as sent', async (method, path, message) => {
    const agent = request(hooks.url);
    const call =
      method === 'GET' ? agent.get(path) : method === 'HEAD' ? agent.head(path) : agent.delete(path);
    const res = await call.set(hooks.auth(ACC));
    expect(res.status).toBe(404);
    if (method !== 'HEAD')
      expect([res.body.error.code, res.body.error.message]).toEqual(['NOT_FOUND', message]);
  });

  it.each([
    ['a malformed percent-escape', '%ZZ'],
    ['well-formed percent-escapes of bytes that are not UTF-8', 'wh_%C0%AF%FF'],
  ])(
    'when a path holds %s, then 400 with the envelope saying it does not decode, never 500',
    async (_what, id) => {
      const res = await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toBe(
        'The path holds a percent-escape that does not decode: % and two hex digits, of UTF-8 bytes.',
      );
    },
  );

  it('when page is beyond any plausible list, then 400 naming page, never 500', async () => {
    const id = await subscribe('http://127.0.0.1:9/paging');
    const res = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?page=92233720368547759`)
      .set(hooks.auth(ACC))
      .expect(400);
    expect(res.body.error.message).toMatch(/page/);
  });

  it('when OPTIONS is sent, then the response is the envelope, not a bare allow list', async () => {
    const res = await request(hooks.url).options('/v1/webhooks').set(hooks.auth(ACC));
    expect(res.status).toBe(404);
    expect(res.body.success).toBe(false);
  });
});
