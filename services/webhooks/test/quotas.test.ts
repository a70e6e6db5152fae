import { newId, signInternalToken } from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, startReceiver, testBrokerPrefix, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

const broker = testBrokerPrefix('wh_quota', removeBrokerPrefix);
let hooks: WebhooksHarness;
let receiver: Receiver;
const DEFAULT_MAX = 3;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_quota',
    prefix: broker.prefix,
    worker: false,
    env: { WEBHOOKS_MAX_PER_ACCOUNT: String(DEFAULT_MAX) },
  });
  receiver = await startReceiver();
});
afterAll(async () => {
  await hooks.stop();
  await receiver.close();
  await broker.cleanup();
});

/** The gateway's token for an account, with the plan's webhook limit when given. */
const auth = (accountId: string, webhooks?: number) => ({
  Authorization: `Bearer ${signInternalToken(
    TEST_INTERNAL_KEYS.signingKey,
    'webhooks',
    accountId,
    30,
    webhooks === undefined ? undefined : { webhooks },
  )}`,
});

const create = (headers: Record<string, string>, n: number) =>
  request(hooks.url)
    .post('/v1/webhooks')
    .set(headers)
    .send({ url: `${receiver.url}/q${n}`, events: ['signal.new'] });

async function countOf(accountId: string): Promise<number> {
  const res = await request(hooks.url).get('/v1/webhooks').set(auth(accountId)).expect(200);
  return res.body.meta.total as number;
}

describe('subscriptions per account', () => {
  it('when an account holds the configured maximum, then one more is 409 naming the limit, and deleting one makes room', async () => {
    const acc = 'acc_quota_default';
    const ids: string[] = [];
    for (let i = 0; i < DEFAULT_MAX; i++) ids.push((await create(auth(acc), i).expect(201)).body.data.id);
    const refused = await create(auth(acc), 99).expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toContain(`limit of ${DEFAULT_MAX} webhook subscriptions`);
    expect(await countOf(acc)).toBe(DEFAULT_MAX);
    // Another account is not affected by this one's subscriptions.
    await create(auth('acc_quota_other'), 0).expect(201);
    await request(hooks.url).delete(`/v1/webhooks/${ids[0]}`).set(auth(acc)).expect(200);
    await create(auth(acc), 100).expect(201);
  });

  it("when the gateway's token carries the plan's limit, then that limit applies instead of the default, higher or lower", async () => {
    const big = 'acc_quota_plan_big';
    for (let i = 0; i < 5; i++) await create(auth(big, 5), i).expect(201);
    const refused = await create(auth(big, 5), 5).expect(409);
    expect(refused.body.error.message).toContain('limit of 5 webhook subscriptions');

    const small = 'acc_quota_plan_small';
    await create(auth(small, 1), 0).expect(201);
    const one = await create(auth(small, 1), 1).expect(409);
    expect(one.body.error.message).toContain('limit of 1 webhook subscription.');
    const none = await create(auth('acc_quota_plan_none', 0), 0).expect(409);
    expect(none.body.error.message).toContain('limit of 0 webhook subscriptions');
  });

  it.each([1, 2, 3])(
    'when 12 creations race for the last 2 places (round %i), then exactly 2 are created, the rest get 409, and the account holds its limit',
    async (round) => {
      const acc = `acc_quota_race_${round}`;
      await create(auth(acc), 0).expect(201);
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => create(auth(acc), i + 1)));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).toHaveLength(2);
      expect(statuses.filter((s) => s === 409)).toHaveLength(10);
      expect(await countOf(acc)).toBe(DEFAULT_MAX);
    },
  );

  it('when a creation stopped between taking a place and storing its subscription, then its place is given back once no running creation can be that old', async () => {
    const acc = 'acc_quota_lost_place';
    await create(auth(acc), 0).expect(201);
    // A place taken a minute ago whose creation never stored its subscription (a crash), and
    // one taken now by a creation still under way.
    await hooks.deps.repository.takePlace(acc, newId('wh', Date.now() - 60_000), DEFAULT_MAX);
    const running = newId('wh');
    await hooks.deps.repository.takePlace(acc, running, DEFAULT_MAX);
    // The account holds 1 subscription and 3 places: the lost place is given back, the running one is not.
    await create(auth(acc), 1).expect(201);
    await create(auth(acc), 2).expect(409);
    await hooks.deps.repository.releasePlace(acc, running);
    await create(auth(acc), 3).expect(201);
    expect(await countOf(acc)).toBe(DEFAULT_MAX);
  });

  it('when a creation at the limit is retried with its Idempotency-Key, then it is a replay (200), not a 409', async () => {
    const acc = 'acc_quota_replay';
    const key = { 'Idempotency-Key': 'quota-replay-1' };
    const first = await create({ ...auth(acc), ...key }, 0).expect(201);
    for (let i = 1; i < DEFAULT_MAX; i++) await create(auth(acc), i).expect(201);
    const again = await create({ ...auth(acc), ...key }, 0).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    // A refused creation does not keep its key: the same key works once there is room.
    const refusedKey = { 'Idempotency-Key': 'quota-replay-2' };
    await create({ ...auth(acc), ...refusedKey }, 50).expect(409);
    await request(hooks.url).delete(`/v1/webhooks/${first.body.data.id}`).set(auth(acc)).expect(200);
    await create({ ...auth(acc), ...refusedKey }, 50).expect(201);
  });
});
