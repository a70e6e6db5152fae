import { lanesOf, removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import { infraUrls, startReceiver, testBrokerPrefix, uniqueName, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startGatedReceiver, startWebhooks } from './webhooks-harness';

/**
 * First attempts wait in their account's lane: one account's backlog, however long, is not a
 * line another account's first attempts stand in. Counted, not timed: the slow account's
 * receiver answers nothing until the test lets it.
 */

/**
 * Moves every message of queue `from` to the back of queue `to`, as the broker moves a lane's
 * jobs that waited past the bus contract's wait (the spill) into the first-attempt queue.
 */
async function spill(from: string, to: string): Promise<number> {
  const conn = await connect(infraUrls().amqpUrl);
  try {
    const ch = await conn.createConfirmChannel();
    let moved = 0;
    for (let msg = await ch.get(from); msg; msg = await ch.get(from)) {
      ch.sendToQueue(to, msg.content, msg.properties);
      await ch.waitForConfirms();
      ch.ack(msg);
      moved++;
    }
    return moved;
  } finally {
    await conn.close();
  }
}

/** Messages ready in a queue, as the broker counts them. */
async function readyIn(queue: string): Promise<number> {
  const conn = await connect(infraUrls().amqpUrl);
  try {
    const ch = await conn.createChannel();
    return (await ch.checkQueue(queue)).messageCount;
  } finally {
    await conn.close();
  }
}

const LANES = 16;
/** Jobs the worker takes from a lane at once: all the slow account may hold of each of its lanes. */
const LANE_PREFETCH = 4;
const SLOW = 'acc_lane_slow';
const slowLanes = lanesOf(SLOW, LANES);
/** The first `acc_lane_<role>_<k>` whose lanes meet `rule`. */
function accountWhere(role: string, rule: (lanes: [number, number]) => boolean): string {
  for (let k = 0; ; k++) if (rule(lanesOf(`acc_lane_${role}_${k}`, LANES))) return `acc_lane_${role}_${k}`;
}
/** An account in neither of the slow account's lanes. */
const FAST = accountWhere('fast', (lanes) => !lanes.some((l) => slowLanes.includes(l)));
/** An account whose own lane is the slow account's own lane, its second lane another. */
const SHARING = accountWhere(
  'sharing',
  ([own, second]) => own === slowLanes[0] && !slowLanes.includes(second),
);

/** Jobs waiting in the worker for a place of their subscription (the gauge). */
const waitingForSubscription = async () =>
  (await metrics.webhookJobsWaitingForSubscription().get()).values[0]?.value ?? 0;

/**
 * A worker that gives each subscription one POST at a time and never gives up on one within a
 * test, and a receiver that holds every request until the test opens it.
 */
async function oneAtATime(label: string) {
  const broker = testBrokerPrefix(label, removeBrokerPrefix);
  const gated = await startGatedReceiver();
  const hooks = await startWebhooks({
    label,
    prefix: broker.prefix,
    env: {
      WEBHOOK_CONCURRENCY_PER_SUBSCRIPTION: '1',
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_RETRY_DELAYS_MS: '60000',
    },
  });
  /** Lets every held request go, then stops the worker, the receiver and the broker's queues. */
  const stop = async () => {
    gated.open();
    await hooks.stop();
    await gated.close();
    await broker.cleanup();
  };
  return { broker, gated, hooks, stop };
}

describe('lanes of first attempts', () => {
  it("when one account's backlog fills its lanes, then an account in other lanes and one sharing its lane get their first attempts while it waits, and every job arrives once", async () => {
    const broker = testBrokerPrefix('wh_lanes', removeBrokerPrefix);
    const gated = await startGatedReceiver();
    /** Requests the slow account's receiver got, answered or not. */
    const received = () => gated.held() + gated.answered.length;
    const healthy = await startReceiver(() => ({ status: 200 }));
    const hooks = await startWebhooks({
      label: 'wh_lanes',
      prefix: broker.prefix,
      env: {
        WEBHOOK_LANES: String(LANES),
        WEBHOOK_LANE_PREFETCH: String(LANE_PREFETCH),
        // Longer than the test: no held attempt gives up and lets the backlog move.
        WEBHOOK_TIMEOUT_MS: '60000',
        WEBHOOK_RETRY_DELAYS_MS: '60000',
      },
    });
    const readyInSlowLanes = async () =>
      (await readyIn(hooks.deps.names.deliveryLane(slowLanes[0]))) +
      (await readyIn(hooks.deps.names.deliveryLane(slowLanes[1])));
    try {
      for (let i = 0; i < 4; i++)
        await request(hooks.url)
          .post('/v1/webhooks')
          .set(hooks.auth(SLOW))
          .send({ url: `${gated.url}/slow${i}`, events: ['signal.new'] })
          .expect(201);
      await publishEvents(broker.prefix, 10);
      // The worker holds what the slow account's lanes let it take (a lane's prefetch from its
      // own, and from its second if fan-out sent jobs there); the rest wait in the two lanes.
      let seen = -1;
      await waitFor(
        async () => {
          const now = received();
          const settled = now === seen && (await readyInSlowLanes()) === 40 - now;
          seen = now;
          return now >= LANE_PREFETCH && settled;
        },
        20_000,
        500,
        "the slow account's lanes to hold its backlog",
      );

      for (const [account, path] of [
        [FAST, '/fast'],
        [SHARING, '/sharing'],
      ] as const)
        await request(hooks.url)
          .post('/v1/webhooks')
          .set(hooks.auth(account))
          .send({ url: `${healthy.url}${path}`, events: ['signal.new'] })
          .expect(201);
      await publishEvents(broker.prefix, 2);
      await waitFor(() => healthy.requests.length === 4, 30_000, 20, "the other accounts' deliveries");

      // Every job of the slow account is held by the worker (at most a prefetch from each of
      // its two lanes) or waits in its lanes; none went to the shared queue.
      const slowReceived = received();
      expect({
        fast: healthy.requests.filter((r) => r.path === '/fast').length,
        sharing: healthy.requests.filter((r) => r.path === '/sharing').length,
        slowHeldAtMostTwoPrefetches: slowReceived <= 2 * LANE_PREFETCH,
        slowHeldOrWaitingInItsLanes: slowReceived + (await readyInSlowLanes()),
        inTheSharedQueue: await readyIn(hooks.deps.names.deliveriesQueue),
      }).toEqual({
        fast: 2,
        sharing: 2,
        slowHeldAtMostTwoPrefetches: true,
        slowHeldOrWaitingInItsLanes: 48,
        inTheSharedQueue: 0,
      });

      gated.open();
      await waitFor(() => received() >= 48, 30_000, 50, "the slow account's backlog");
      await waitFor(async () => (await readyInSlowLanes()) === 0, 10_000, 50, 'the slow lanes to be empty');
      expect({ slowReceived: received(), others: healthy.requests.length }).toEqual({
        slowReceived: 48,
        others: 4,
      });
    } finally {
      gated.open();
      await hooks.stop();
      await gated.close();
      await healthy.close();
      await broker.cleanup();
    }
  }, 120_000);

  it("when an account sends a test event while another account's spilled backlog fills the first-attempt queue, then it waits in its own lane, not behind that backlog, and arrives", async () => {
    const broker = testBrokerPrefix('wh_lanes_test', removeBrokerPrefix);
    const dbName = uniqueName('t_wh_lanes_test');
    const gated = await startGatedReceiver();
    const healthy = await startReceiver(() => ({ status: 200 }));
    const env = {
      WEBHOOK_LANES: String(LANES),
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_RETRY_DELAYS_MS: '60000',
    };
    // The API first, alone: the queues are read before any worker takes from them.
    const api = await startWebhooks({
      label: 'wh_lanes_test',
      prefix: broker.prefix,
      worker: false,
      dbName,
      env,
    });
    let worker: Awaited<ReturnType<typeof startWebhooks>> | undefined;
    const subscribe = async (account: string, url: string) => {
      const created = await request(api.url)
        .post('/v1/webhooks')
        .set(api.auth(account))
        .send({ url, events: ['signal.new'] })
        .expect(201);
      return created.body.data.id as string;
    };
    const sendTest = (account: string, id: string) =>
      request(api.url).post(`/v1/webhooks/${id}/test`).set(api.auth(account)).expect(202);
    try {
      const slowId = await subscribe(SLOW, `${gated.url}/slow`);
      for (let i = 0; i < 20; i++) await sendTest(SLOW, slowId);
      // The slow account's test events wait in its own lane, and spill as if they waited there
      // past the bus contract's wait.
      expect(await spill(api.deps.names.deliveryLane(slowLanes[0]), api.deps.names.deliveriesQueue)).toBe(20);
      const fastId = await subscribe(FAST, `${healthy.url}/fast`);
      await sendTest(FAST, fastId);
      expect({
        inItsOwnLane: await readyIn(api.deps.names.deliveryLane(lanesOf(FAST, LANES)[0])),
        inTheFirstAttemptQueue: await readyIn(api.deps.names.deliveriesQueue),
      }).toEqual({ inItsOwnLane: 1, inTheFirstAttemptQueue: 20 });

      worker = await startWebhooks({ label: 'wh_lanes_test_worker', prefix: broker.prefix, dbName, env });
      await waitFor(() => healthy.requests.length === 1, 30_000, 20, "the other account's test event");
      expect({
        path: healthy.requests[0]?.path,
        test: JSON.parse(healthy.requests[0]?.body ?? '{}').data?.test,
        slowAnswered: gated.answered.length,
      }).toEqual({ path: '/fast', test: true, slowAnswered: 0 });
    } finally {
      gated.open();
      await worker?.stop();
      await api.deps.mongo.dropDatabase().catch(() => undefined);
      await api.stop();
      await gated.close();
      await healthy.close();
      await broker.cleanup();
    }
  }, 120_000);

  it('when a test event is sent to a subscription busy with its own deliveries, then it waits in the worker for the next place, not outside it, and arrives', async () => {
    const { broker, gated, hooks, stop } = await oneAtATime('wh_lanes_busy_test');
    const putBacks = async () =>
      (await metrics.webhookDeferrals().get()).values.reduce((n, v) => n + v.value, 0);
    try {
      const created = await request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth('acc_lane_busy_test'))
        .send({ url: `${gated.url}/busy`, events: ['signal.new'] })
        .expect(201);
      const id = created.body.data.id as string;
      await publishEvents(broker.prefix, 1);
      await waitFor(() => gated.held() === 1, 20_000, 20, 'the delivery held at the receiver');
      const putBacksBefore = await putBacks();
      await request(hooks.url)
        .post(`/v1/webhooks/${id}/test`)
        .set(hooks.auth('acc_lane_busy_test'))
        .expect(202);
      await waitFor(
        async () => (await waitingForSubscription()) === 1,
        20_000,
        20,
        'the test event waiting for its subscription',
      );
      expect({ held: gated.held(), putBacks: (await putBacks()) - putBacksBefore }).toEqual({
        held: 1,
        putBacks: 0,
      });
      gated.open();
      await waitFor(() => gated.answered.length === 2, 20_000, 20, 'the delivery and the test event');
      expect(gated.answered).toEqual(['/busy', '/busy']);
    } finally {
      await stop();
    }
  }, 120_000);

  it('when a subscription is deleted while its jobs wait in the worker for it, then its receiver gets nothing more', async () => {
    const { broker, gated, hooks, stop } = await oneAtATime('wh_lanes_gone');
    try {
      const created = await request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth('acc_lane_gone'))
        .send({ url: `${gated.url}/gone`, events: ['signal.new'] })
        .expect(201);
      await publishEvents(broker.prefix, 5);
      // One POST held at the receiver, the other four jobs waiting in the worker for it.
      await waitFor(
        async () => gated.held() === 1 && (await waitingForSubscription()) === 4,
        20_000,
        20,
        'one POST held and four jobs waiting for the subscription',
      );
      await request(hooks.url)
        .delete(`/v1/webhooks/${created.body.data.id as string}`)
        .set(hooks.auth('acc_lane_gone'))
        .expect(200);
      gated.open();
      await waitFor(
        async () => (await waitingForSubscription()) === 0,
        20_000,
        20,
        'the waiting jobs to leave',
      );
      expect({ received: gated.held() + gated.answered.length }).toEqual({ received: 1 });
    } finally {
      await stop();
    }
  }, 120_000);
});
