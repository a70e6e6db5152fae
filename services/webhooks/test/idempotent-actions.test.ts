import { recoverWebhookResultSchema } from '@signal/contracts';
import { removeBrokerPrefix } from '@signal/messaging';
import { sendOnceOver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { IdempotencyRepository } from '../src/data/idempotency.repository';
import { webhookCollections } from '../src/data/webhook.models';
import { startScriptedReceiver, startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * The actions on a subscription (rotate-secret, test, retry, recover) once per Idempotency-Key,
 * as the SDKs send them again when a response is lost: a repeat answers as the first request did
 * and does not act again; repeats at once act once; the key with another request is refused.
 */
const broker = testBrokerPrefix('wh_idem_actions', removeBrokerPrefix);
const ACC = 'acc_idem_actions';
let hooks: WebhooksHarness;
let receiver: Receiver;
/** What the receiver answers, per path: each status once, the last one from then on. */
let answers: Map<string, number[]>;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_idem_actions',
    prefix: broker.prefix,
    // A delivery that failed once waits on a timer far beyond the test: only retry now moves it.
    env: { WEBHOOK_RETRY_DELAYS_MS: '600000,600000' },
  });
  ({ receiver, answers } = await startScriptedReceiver());
});
afterAll(async () => {
  await hooks.stop();
  await receiver.close();
  await broker.cleanup();
});

async function subscribe(path: string, statuses: number[] = [200]) {
  answers.set(path, statuses);
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url: `${receiver.url}${path}`, events: ['signal.new'] })
    .expect(201);
  return res.body.data as { id: string; secret: string };
}

/** One POST of `path` under `key`, as a client's retry sends it again: the same key and body. */
const post = (path: string, key: string, body?: object) =>
  request(hooks.url)
    .post(path)
    .set({ ...hooks.auth(ACC), 'Idempotency-Key': key })
    .send(body);

const replayedOf = (res: { headers: Record<string, string | undefined> }) =>
  res.headers['idempotent-replayed'] === 'true';

const postsTo = (path: string) => receiver.requests.filter((r) => r.path === path);

const deliveriesOf = async (id: string) =>
  (await request(hooks.url).get(`/v1/webhooks/${id}/deliveries`).set(hooks.auth(ACC)).expect(200)).body
    .data as { id: string; status: string; attempts_made: number }[];

const deliveryOf = async (id: string, deliveryId: string) =>
  (
    await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
      .set(hooks.auth(ACC))
      .expect(200)
  ).body.data as { id: string; status: string; attempts_made: number };

/** Sends a test event and waits for its first attempt to be made; its delivery id. */
async function testAttemptedOnce(id: string): Promise<string> {
  const sent = await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
  const deliveryId = sent.body.data.id as string;
  const attempted = async () => (await deliveryOf(id, deliveryId)).attempts_made === 1;
  await waitFor(attempted, 10_000, 50, 'the first attempt');
  return deliveryId;
}

describe('rotate-secret with an Idempotency-Key', () => {
  it('when a rotation is sent three times at once and again later with one key, then one rotation is made and every answer carries its secret', async () => {
    const path = '/rotate-once';
    const { id, secret: first } = await subscribe(path);
    const key = 'rotate-once-1';
    const atOnce = await Promise.all(
      [1, 2, 3].map(() => sendOnceOver(() => post(`/v1/webhooks/${id}/rotate-secret`, key))),
    );
    expect(atOnce.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(atOnce.filter((r) => !replayedOf(r))).toHaveLength(1);
    const secret = atOnce[0]!.body.data.secret as string;
    expect(atOnce.map((r) => r.body.data.secret)).toEqual([secret, secret, secret]);
    expect(secret).not.toBe(first);
    const later = await post(`/v1/webhooks/${id}/rotate-secret`, key).expect(200);
    expect(replayedOf(later)).toBe(true);
    expect(later.body.data.secret).toBe(secret);

    // One rotation: a delivery is signed by the new secret and the creation's, nothing else.
    await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
    const [req] = await waitFor(() => (postsTo(path).length ? postsTo(path) : undefined), 10_000, 50, 'test');
    const headers = {
      'webhook-id': String(req!.headers['webhook-id']),
      'webhook-timestamp': String(req!.headers['webhook-timestamp']),
      'webhook-signature': String(req!.headers['webhook-signature']),
    };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(req!.body, headers)).not.toThrow();
    expect(() => new Webhook(first).verify(req!.body, headers)).not.toThrow();
  });

  it('when a key is sent again with another request, then 409 IDEMPOTENCY_CONFLICT and nothing is done', async () => {
    const { id } = await subscribe('/rotate-conflict');
    const key = 'rotate-conflict-1';
    await post(`/v1/webhooks/${id}/rotate-secret`, key).expect(200);
    const asTest = await post(`/v1/webhooks/${id}/test`, key).expect(409);
    expect(asTest.body.error).toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      message: expect.stringContaining('another request (another route, webhook, delivery or body)'),
    });
    expect(await deliveriesOf(id)).toHaveLength(0);
    const { id: other } = await subscribe('/rotate-conflict-other');
    const onOther = await post(`/v1/webhooks/${other}/rotate-secret`, key).expect(409);
    expect(onOther.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });
});

describe('test events with an Idempotency-Key', () => {
  it('when a test event is sent three times at once with one key, then one delivery is queued and POSTed, and every answer names it', async () => {
    const path = '/test-once';
    const { id } = await subscribe(path);
    const atOnce = await Promise.all(
      [1, 2, 3].map(() => sendOnceOver(() => post(`/v1/webhooks/${id}/test`, 'test-once-1'))),
    );
    expect(atOnce.map((r) => r.status)).toEqual([202, 202, 202]);
    expect(atOnce.filter((r) => !replayedOf(r))).toHaveLength(1);
    const deliveryId = atOnce[0]!.body.data.id as string;
    expect(atOnce.map((r) => r.body.data.id)).toEqual([deliveryId, deliveryId, deliveryId]);
    expect((await deliveriesOf(id)).map((d) => d.id)).toEqual([deliveryId]);
    await waitFor(async () => (await deliveryOf(id, deliveryId)).status === 'succeeded', 10_000, 50, 'test');
    expect(postsTo(path)).toHaveLength(1);
    // Later, the repeat answers with the delivery as it stands.
    const later = await post(`/v1/webhooks/${id}/test`, 'test-once-1').expect(202);
    expect(replayedOf(later)).toBe(true);
    expect(later.body.data).toMatchObject({ id: deliveryId, status: 'succeeded' });
    expect(await deliveriesOf(id)).toHaveLength(1);
  });

  it('when the first request with a key is refused (a disabled webhook), then the key is given back and a repeat after enabling sends the test', async () => {
    const { id } = await subscribe('/test-refused');
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: false })
      .expect(200);
    const refused = await post(`/v1/webhooks/${id}/test`, 'test-refused-1').expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: true })
      .expect(200);
    const sent = await post(`/v1/webhooks/${id}/test`, 'test-refused-1').expect(202);
    expect(replayedOf(sent)).toBe(false);
    expect((await deliveriesOf(id)).map((d) => d.id)).toEqual([sent.body.data.id]);
  });
});

describe('retry now and recover with an Idempotency-Key', () => {
  it('when a retry that made a delivery succeed is sent again with its key, then the repeat answers with the succeeded delivery, not a 409 or an attempt', async () => {
    const path = '/retry-once';
    const { id } = await subscribe(path, [500, 200]);
    const deliveryId = await testAttemptedOnce(id);
    const retry = `/v1/webhooks/${id}/deliveries/${deliveryId}/retry`;
    const first = await post(retry, 'retry-once-1').expect(202);
    expect(replayedOf(first)).toBe(false);
    await waitFor(
      async () => (await deliveryOf(id, deliveryId)).status === 'succeeded',
      10_000,
      50,
      'success',
    );
    const again = await post(retry, 'retry-once-1').expect(202);
    expect(replayedOf(again)).toBe(true);
    expect(again.body.data).toMatchObject({ id: deliveryId, status: 'succeeded', attempts_made: 2 });
    expect(postsTo(path)).toHaveLength(2);
    // Without the key, the same retry is what it always was: a succeeded delivery is not attempted.
    await request(hooks.url).post(retry).set(hooks.auth(ACC)).expect(409);
  });

  it('when a recover is sent again with its key, then the repeat answers as the first did; with another since, 409 IDEMPOTENCY_CONFLICT', async () => {
    const { id } = await subscribe('/recover-once', [500]);
    await testAttemptedOnce(id);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const first = await post(`/v1/webhooks/${id}/recover`, 'recover-once-1', { since }).expect(202);
    expect(recoverWebhookResultSchema.parse(first.body.data)).toMatchObject({ queued: 1 });
    expect(replayedOf(first)).toBe(false);
    const again = await post(`/v1/webhooks/${id}/recover`, 'recover-once-1', { since }).expect(202);
    expect(replayedOf(again)).toBe(true);
    expect(again.body.data).toEqual(first.body.data);
    // Without a key, a repeat finds the delivery's attempt already asked for and queues none.
    const unkeyed = await request(hooks.url)
      .post(`/v1/webhooks/${id}/recover`)
      .set(hooks.auth(ACC))
      .send({ since })
      .expect(202);
    expect(unkeyed.body.data.queued).toBe(0);
    const other = await post(`/v1/webhooks/${id}/recover`, 'recover-once-1', {
      since: new Date(Date.now() - 60_000).toISOString(),
    }).expect(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });
});

describe('repeats after the webhook is deleted', () => {
  it('when a test, a retry and a recover are repeated with their keys after the webhook is deleted, then each is 404 as any call on it, not the old answer', async () => {
    const { id } = await subscribe('/deleted-after', [500]);
    const test = await post(`/v1/webhooks/${id}/test`, 'deleted-test').expect(202);
    const deliveryId = test.body.data.id as string;
    await waitFor(async () => (await deliveryOf(id, deliveryId)).attempts_made === 1, 10_000, 50, 'attempt');
    const retry = `/v1/webhooks/${id}/deliveries/${deliveryId}/retry`;
    await post(retry, 'deleted-retry').expect(202);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    await post(`/v1/webhooks/${id}/recover`, 'deleted-recover', { since }).expect(202);
    await post(`/v1/webhooks/${id}/rotate-secret`, 'deleted-rotate').expect(200);
    await request(hooks.url).delete(`/v1/webhooks/${id}`).set(hooks.auth(ACC)).expect(200);

    const repeats = await Promise.all([
      post(`/v1/webhooks/${id}/test`, 'deleted-test'),
      post(retry, 'deleted-retry'),
      post(`/v1/webhooks/${id}/recover`, 'deleted-recover', { since }),
      post(`/v1/webhooks/${id}/rotate-secret`, 'deleted-rotate'),
    ]);
    expect(repeats.map((r) => [r.status, r.body.error?.code])).toEqual([
      [404, 'NOT_FOUND'],
      [404, 'NOT_FOUND'],
      [404, 'NOT_FOUND'],
      [404, 'NOT_FOUND'],
    ]);
  });
});

describe('Idempotency-Key records', () => {
  it('when a claim comes an hour after the last sweep, then the records past their 24 h are removed and the others kept', async () => {
    const keys = webhookCollections(hooks.deps.mongo).idempotency;
    let now = Date.parse('2026-01-01T00:00:00Z');
    const records = new IdempotencyRepository(keys, 24 * 3_600_000, () => now);
    const scope = `acc_sweep_${Date.now()}`;
    await records.claim(scope, 'old', 'h', '');
    now += 23 * 3_600_000;
    await records.claim(scope, 'recent', 'h', '');
    now += 2 * 3_600_000; // 'old' is past its 24 h, 'recent' is not; the last sweep was 2 h ago
    await records.claim(scope, 'new', 'h', '');
    const left = await keys
      .find({ _id: { $in: ['old', 'recent', 'new'].map((k) => `${scope}:${k}`) } })
      .toArray();
    expect(left.map((r) => r._id).sort()).toEqual([`${scope}:new`, `${scope}:recent`]);
  });
});
