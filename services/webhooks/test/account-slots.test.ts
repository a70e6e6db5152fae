import { DELAY_LEVELS, brokerNames, lanesOf, removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import { infraUrls, startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import { connect } from 'amqplib';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startGatedReceiver, startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * How an account's places in the worker are spent, counted rather than timed: one slow
 * subscription holds at most a quarter of its account's POSTs in flight, and jobs of an account
 * with all its POSTs in flight wait in the worker for one to finish, not in the broker.
 */

/**
 * A queue of the test's own bound to every level of the delivery delay cascade: it gets a copy
 * of each job sent to wait in the broker (a retry, or a job put back for want of a place).
 */
async function tapDelayCascade(prefix: string) {
  const conn = await connect(infraUrls().amqpUrl);
  const ch = await conn.createChannel();
  const { queue } = await ch.assertQueue('', { exclusive: true });
  const names = brokerNames(prefix);
  for (let level = 0; level < DELAY_LEVELS; level++) {
    await ch.assertExchange(names.deliveryDelayLevel(level), 'topic', { durable: true });
    await ch.bindQueue(queue, names.deliveryDelayLevel(level), '#');
  }
  return {
    copies: async () => (await ch.checkQueue(queue)).messageCount,
    /** Messages ready in one of the prefix's queues (taken by no consumer yet). */
    ready: async (name: string) => (await ch.checkQueue(name)).messageCount,
    close: () => conn.close(),
  };
}

/** The worker's gauge of jobs over their account's share waiting in it (the metric operators read). */
async function waitingOverShare(): Promise<number> {
  return (await metrics.webhookJobsWaitingOverShare().get()).values[0]?.value ?? 0;
}

async function subscribe(hooks: WebhooksHarness, account: string, url: string): Promise<string> {
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(account))
    .send({ url, events: ['signal.new'] })
    .expect(201);
  return res.body.data.id as string;
}

/** Long against every wait here: a delivery that needed a held attempt to time out could not arrive. */
const TIMEOUT_MS = 600_000;

describe("a slow subscription and its account's other subscriptions", () => {
  it('when one subscription of an account never answers, then it holds a quarter of the account’s POSTs and the other three get every event', async () => {
    const broker = testBrokerPrefix('wh_slots_slow', removeBrokerPrefix);
    const slow = await startGatedReceiver();
    const healthy: Receiver[] = [];
    // 8 POSTs for the account: the slow subscription may hold 2 of them, whatever its own setting (10).
    const hooks = await startWebhooks({
      label: 'wh_slots_slow',
      prefix: broker.prefix,
      env: { WEBHOOK_CONCURRENCY_PER_ACCOUNT: '8', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
    });
    try {
      await subscribe(hooks, 'acc_slots_slow', `${slow.url}/slow`);
      for (let i = 0; i < 3; i++) {
        healthy.push(await startReceiver());
        await subscribe(hooks, 'acc_slots_slow', `${healthy[i]!.url}/ok`);
      }
      const events = 20;
      await publishEvents(broker.prefix, events);
      await waitFor(
        () => healthy.every((r) => r.requests.length >= events),
        30_000,
        20,
        'every healthy subscription to get every event',
      );
      await waitFor(() => slow.held() >= 2, 30_000, 20, 'the slow receiver to hold its attempts');

      expect({
        healthyGot: healthy.map((r) => r.requests.length),
        slowHolds: slow.held(),
      }).toEqual({ healthyGot: [events, events, events], slowHolds: 2 });
    } finally {
      await slow.close();
      await hooks.stop();
      for (const r of healthy) await r.close();
      await broker.cleanup();
    }
  }, 180_000);
});

describe("an account's line in the worker", () => {
  it('when an account has all its POSTs in flight, then its next jobs wait in the worker and go out as those finish, none through the delay cascade', async () => {
    const broker = testBrokerPrefix('wh_slots_line', removeBrokerPrefix);
    const gated = await startGatedReceiver();
    const hooks = await startWebhooks({
      label: 'wh_slots_line',
      prefix: broker.prefix,
      env: { WEBHOOK_CONCURRENCY_PER_ACCOUNT: '4', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
    });
    const tap = await tapDelayCascade(broker.prefix);
    try {
      const subscriptions = 8;
      for (let i = 0; i < subscriptions; i++) await subscribe(hooks, 'acc_slots_line', `${gated.url}/s${i}`);
      await publishEvents(broker.prefix, 1);
      // 4 POSTs held at the receiver; the other 4 jobs taken from the queue, waiting in the worker.
      await waitFor(() => gated.held() >= 4, 30_000, 20, 'the account’s 4 POSTs in flight');
      await waitFor(
        async () =>
          (await tap.ready(
            hooks.deps.names.deliveryLane(lanesOf('acc_slots_line', hooks.config.WEBHOOK_LANES)[0]),
          )) === 0,
        30_000,
        20,
        'every job taken by the worker',
      );
      expect({ held: gated.held(), inTheCascade: await tap.copies() }).toEqual({ held: 4, inTheCascade: 0 });

      gated.open();
      await waitFor(
        () => gated.answered.length >= subscriptions,
        30_000,
        20,
        'each subscription to get the event',
      );
      expect({
        paths: [...gated.answered].sort(),
        inTheCascade: await tap.copies(),
      }).toEqual({
        paths: Array.from({ length: subscriptions }, (_, i) => `/s${i}`).sort(),
        inTheCascade: 0,
      });
    } finally {
      await tap.close();
      await gated.close();
      await hooks.stop();
      await broker.cleanup();
    }
  }, 180_000);
});

describe("jobs over an account's share, with put-backs over their budget", () => {
  it('when an account holds its share, its POSTs are finishing and put-backs are spent, then its further jobs wait in the worker and each arrives once', async () => {
    const broker = testBrokerPrefix('wh_slots_budget', removeBrokerPrefix);
    // Each path's first POST fails at once; its retry takes 300 ms: the account's places free
    // steadily, never all at once. First attempts come from the account's lane, whose prefetch is
    // its bound; retries come from the due queue, shared by every account, where shares hold.
    const answered = new Map<string, number>();
    const receiver = await startReceiver((req) => {
      const n = (answered.get(req.path) ?? 0) + 1;
      answered.set(req.path, n);
      return n === 1 ? { status: 500 } : { status: 200, delayMs: 300 };
    });
    // Alone, the account may hold half of the worker's 8 jobs: its 4 POSTs; the budget puts back one job a second.
    const hooks = await startWebhooks({
      label: 'wh_slots_budget',
      prefix: broker.prefix,
      env: {
        WEBHOOK_WORKER_PREFETCH: '8',
        WEBHOOK_CONCURRENCY_PER_ACCOUNT: '4',
        WEBHOOK_PUT_BACKS_PER_SECOND: '1',
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_RETRY_DELAYS_MS: '100',
      },
    });
    const tap = await tapDelayCascade(broker.prefix);
    try {
      const subscriptions = 24;
      for (let i = 0; i < subscriptions; i++)
        await subscribe(hooks, 'acc_slots_budget', `${receiver.url}/s${i}`);
      await publishEvents(broker.prefix, 1);
      await waitFor(async () => (await waitingOverShare()) > 0, 30_000, 5, 'jobs waiting over the share');
      await waitFor(
        () => [...answered.values()].filter((n) => n >= 2).length >= subscriptions,
        60_000,
        20,
        'each subscription to get the event',
      );
      // Every retry over the share was put back at the budget's pace or served from the worker:
      // without a budget each of the 20 goes through the broker, most of them more than once.
      // The cascade also carries each of the 24 retries once.
      expect({
        paths: [...new Set(receiver.requests.map((r) => r.path))].sort(),
        requests: receiver.requests.length,
        fewerPutBacksThanJobsOverTheShare: (await tap.copies()) - subscriptions < subscriptions - 4,
        waitingOverShare: await waitingOverShare(),
      }).toEqual({
        paths: Array.from({ length: subscriptions }, (_, i) => `/s${i}`).sort(),
        requests: 2 * subscriptions,
        fewerPutBacksThanJobsOverTheShare: true,
        waitingOverShare: 0,
      });
    } finally {
      await tap.close();
      await receiver.close();
      await hooks.stop();
      await broker.cleanup();
    }
  }, 180_000);
});
