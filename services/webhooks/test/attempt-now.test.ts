import { recoverWebhookResultSchema, webhookSubscriptionSchema } from '@signal/contracts';
import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import { testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { attemptSeq, deliveryIdFor, logEntryId } from '../src/domain/delivery-state';
import { startScriptedReceiver, startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * "Attempt now", the one behaviour behind retry now and recover: a pending delivery is attempted
 * without waiting for its timer (whose job then finds the attempt made), a failed one gets one
 * more attempt and no retries; recover covers failed and pending deliveries a page at a time,
 * limited per account. Plus each subscription's health and each delivery's last response.
 */
const broker = testBrokerPrefix('wh_attempt_now', removeBrokerPrefix);
const ACC = 'acc_attempt_now';
let hooks: WebhooksHarness;
let receiver: Receiver;
/** What the receiver answers, per path. */
let answers: Map<string, number[]>;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_attempt_now',
    prefix: broker.prefix,
    // Two retries, long after anything here: a delivery that failed once waits on its timer, and
    // one that failed twice still does.
    env: {
      WEBHOOK_RETRY_DELAYS_MS: '600000,600000',
      WEBHOOK_HEALTH_FLUSH_MS: '20',
      WEBHOOK_HEALTH_REFRESH_MS: '200',
      WEBHOOK_RECOVER_PER_MINUTE: '50',
    },
  });
  ({ receiver, answers } = await startScriptedReceiver());
});
afterAll(async () => {
  await hooks.stop();
  await receiver.close();
  await broker.cleanup();
});

async function subscribe(path: string, statuses: number[]): Promise<string> {
  answers.set(path, statuses);
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url: `${receiver.url}${path}`, events: ['signal.new'] })
    .expect(201);
  return res.body.data.id as string;
}

const sendTest = async (id: string) =>
  (await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202)).body.data
    .id as string;

interface DeliveryView {
  id: string;
  status: string;
  attempts_made: number;
  next_attempt_at: string | null;
  created_at: string;
  last_response_status: number | null;
  last_error: string | null;
}

const delivery = async (id: string, deliveryId: string): Promise<DeliveryView> =>
  (
    await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
      .set(hooks.auth(ACC))
      .expect(200)
  ).body.data;

const until = (id: string, deliveryId: string, check: (d: DeliveryView) => boolean, what: string) =>
  waitFor(
    async () => {
      const d = await delivery(id, deliveryId);
      return check(d) ? d : undefined;
    },
    20_000,
    50,
    what,
  );

const postsOf = (path: string) => receiver.requests.filter((r) => r.path === path).length;
const claimedElsewhere = async () =>
  (await metrics.webhookAttempts().get()).values.find((v) => v.labels.outcome === 'claimed_elsewhere')
    ?.value ?? 0;

describe('retry now', () => {
  it('when a delivery waits on its retry timer and retry now is asked, then it is attempted at once and the listed delivery shows its last response', async () => {
    const id = await subscribe('/now', [500, 200]);
    const d = await sendTest(id);
    const waiting = await until(id, d, (x) => x.attempts_made === 1, 'the first attempt to fail');
    expect(waiting).toMatchObject({ status: 'pending', last_response_status: 500, last_error: 'http_500' });
    // Its timer is the configured 10-minute delay (±20 %) after the delivery began, not now.
    expect(Date.parse(waiting.next_attempt_at!) - Date.parse(waiting.created_at)).toBeGreaterThanOrEqual(
      480_000,
    );

    await request(hooks.url)
      .post(`/v1/webhooks/${id}/deliveries/${d}/retry`)
      .set(hooks.auth(ACC))
      .expect(202);
    const done = await until(id, d, (x) => x.status === 'succeeded', 'the delivery to succeed now');
    expect(done).toMatchObject({ attempts_made: 2, last_response_status: 200, last_error: null });
    expect(postsOf('/now')).toBe(2);
    const list = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(list.body.data[0]).toMatchObject({ id: d, last_response_status: 200 });
    // A succeeded delivery is not attempted again.
    const again = await request(hooks.url)
      .post(`/v1/webhooks/${id}/deliveries/${d}/retry`)
      .set(hooks.auth(ACC));
    expect(again.status).toBe(409);
  });

  it('when the job of an attempt already made comes (the timer firing after retry now), then it finds the attempt claimed and POSTs nothing', async () => {
    const id = await subscribe('/twice', [500, 200]);
    const d = await sendTest(id);
    await until(id, d, (x) => x.attempts_made === 1, 'the first attempt to fail');
    const claimedBefore = await claimedElsewhere();
    // Two asks at once: one queues attempt 2; the other finds it queued and returns the delivery.
    const [a, b] = await Promise.all([
      request(hooks.url).post(`/v1/webhooks/${id}/deliveries/${d}/retry`).set(hooks.auth(ACC)),
      request(hooks.url).post(`/v1/webhooks/${id}/deliveries/${d}/retry`).set(hooks.auth(ACC)),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    await until(id, d, (x) => x.status === 'succeeded', 'the delivery to succeed');
    // What the retry timer's job does when it comes: the same attempt, another job.
    await hooks.deps.schedule({ delivery_id: d, attempt: 2, webhook_id: id, job_id: 'job_timer' });
    await waitFor(
      async () => (await claimedElsewhere()) > claimedBefore,
      20_000,
      20,
      'the timer job to be handled',
    );
    expect(postsOf('/twice')).toBe(2);
    expect((await delivery(id, d)).attempts_made).toBe(2);
  });
});

describe('an attempt a crash interrupted', () => {
  it('when a job comes again for an attempt it claimed before its worker died, then the attempt is recorded as interrupted, begun when it was claimed', async () => {
    const id = await subscribe('/interrupted', [200]);
    const deliveryId = deliveryIdFor(id, 'evt_interrupted', Date.now());
    await hooks.deps.repository.insertDelivery({
      _id: deliveryId,
      account_id: ACC,
      webhook_id: id,
      event_id: 'evt_interrupted',
      event: 'signal.new',
      payload: '{}',
      status: 'pending',
      created_at: new Date(Date.now() - 60_000),
    });
    // What the worker that died wrote before it POSTed: its claim of attempt 1.
    const claimedAt = new Date(Date.now() - 30_000);
    await hooks.deps.repository.insertClaims([
      { _id: logEntryId(deliveryId, attemptSeq(1)), job_id: 'job_crashed', at: claimedAt },
    ]);
    await hooks.deps.schedule({ delivery_id: deliveryId, attempt: 1, webhook_id: id, job_id: 'job_crashed' });
    await until(id, deliveryId, (x) => x.attempts_made === 1, 'the interrupted attempt recorded');
    const detail = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(detail.body.data.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        error: 'attempt_interrupted',
        started_at: claimedAt.toISOString(),
      }),
    ]);
    // Not POSTed again by the job that came back: the next attempt is the retry's.
    expect(postsOf('/interrupted')).toBe(0);
  });
});

describe('recover', () => {
  const recover = (id: string, body: Record<string, unknown>) =>
    request(hooks.url).post(`/v1/webhooks/${id}/recover`).set(hooks.auth(ACC)).send(body);

  it('when deliveries wait on their retry timers, then recover attempts them now, a page at a time with a cursor', async () => {
    const id = await subscribe('/recover-pending', [500, 500, 500, 200]);
    const since = new Date(Date.now() - 1000).toISOString();
    const ids = [await sendTest(id), await sendTest(id), await sendTest(id)];
    for (const d of ids) await until(id, d, (x) => x.attempts_made === 1, 'each first attempt to fail');

    const first = await recover(id, { since, limit: 2 }).expect(202);
    const page1 = recoverWebhookResultSchema.parse(first.body.data);
    expect(page1.queued).toBe(2);
    expect(page1.next_cursor).not.toBeNull();
    const second = await recover(id, { since, limit: 2, cursor: page1.next_cursor }).expect(202);
    expect(recoverWebhookResultSchema.parse(second.body.data)).toEqual({
      since,
      queued: 1,
      next_cursor: null,
    });
    for (const d of ids)
      await until(id, d, (x) => x.status === 'succeeded', 'each recovered delivery to succeed');
    // The ledger: 2 POSTs each, 2 attempts recorded each.
    expect(postsOf('/recover-pending')).toBe(6);
    for (const d of ids) expect((await delivery(id, d)).attempts_made).toBe(2);
    // A repeat finds nothing open.
    expect((await recover(id, { since }).expect(202)).body.data.queued).toBe(0);
  });

  it('when older deliveries are open too, then the first page of a recover since a time holds deliveries created since, not the oldest open ones', async () => {
    const id = await subscribe('/recover-since', [500]);
    const older = [await sendTest(id), await sendTest(id), await sendTest(id)];
    for (const d of older)
      await until(id, d, (x) => x.attempts_made === 1, 'each older first attempt to fail');
    // Past the allowance recover gives the processes' clocks (5 s): these were opened before `since`.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    const since = new Date().toISOString();
    const newer = [await sendTest(id), await sendTest(id)];
    for (const d of newer)
      await until(id, d, (x) => x.attempts_made === 1, 'each newer first attempt to fail');

    const pages = [];
    let cursor: string | null | undefined;
    do {
      const res = await recover(id, { since, limit: 1, ...(cursor ? { cursor } : {}) }).expect(202);
      const page = recoverWebhookResultSchema.parse(res.body.data);
      pages.push(page.queued);
      cursor = page.next_cursor;
    } while (cursor);
    // One delivery created since per page, then an empty last page: no page spent on older ones.
    expect(pages).toEqual([1, 1, 0]);
    for (const d of newer)
      await until(id, d, (x) => x.attempts_made === 2, 'each newer delivery to be recovered');
    for (const d of older) expect((await delivery(id, d)).attempts_made).toBe(1);
  });

  it('when recover is given a cursor that no recover call returned, then it is a 400 naming the cursor, never "nothing left"', async () => {
    const id = await subscribe('/recover-bad-cursor', [500, 500, 500, 500]);
    const since = new Date(Date.now() - 1000).toISOString();
    const d = await sendTest(id);
    await until(id, d, (x) => x.attempts_made === 1, 'the first attempt to fail');
    for (const cursor of ['zzz', '!!!not-a-cursor!!!', 'wh_01KAB3M1N2P3Q4R5S6T7V8W9X0']) {
      const res = await recover(id, { since, cursor }).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(res.body.error.details)).toContain('cursor');
    }
  });

  it('when recover is given a since later than the server’s time, then it is a 400 naming since and both times, never 202 with nothing queued', async () => {
    const id = await subscribe('/recover-future', [500, 500, 500, 500]);
    const d = await sendTest(id);
    await until(id, d, (x) => x.attempts_made === 1, 'the first attempt to fail');
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    const res = await recover(id, { since: tomorrow }).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'since', message: expect.stringContaining(tomorrow) }]);
    expect(res.body.error.message).toContain("later than the server's time");
    // A client clock a little ahead is not a mistake: it is taken, and finds what it finds.
    const soon = new Date(Date.now() + 60_000).toISOString();
    expect((await recover(id, { since: soon }).expect(202)).body.data.queued).toBe(0);
  });

  it('when a failed delivery is recovered, then it gets one attempt, and when that fails it is failed again, with no retries', async () => {
    // 410 disables the subscription and fails the delivery at its first attempt.
    const id = await subscribe('/recover-failed', [410, 500]);
    const since = new Date(Date.now() - 1000).toISOString();
    const d = await sendTest(id);
    await until(id, d, (x) => x.status === 'failed', 'the delivery to fail');
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: true })
      .expect(200);
    expect((await recover(id, { since }).expect(202)).body.data.queued).toBe(1);
    const after = await until(id, d, (x) => x.attempts_made === 2, 'the recovered attempt');
    expect(after).toMatchObject({ status: 'failed', next_attempt_at: null, last_response_status: 500 });
    expect(postsOf('/recover-failed')).toBe(2);
    // Its one more attempt is spent: a repeat re-sends nothing (recover is no lever to make us
    // POST again and again to a failing URL); retry now on the delivery is still there.
    expect((await recover(id, { since }).expect(202)).body.data.queued).toBe(0);
    expect(postsOf('/recover-failed')).toBe(2);
  });

  it("when a pending delivery's recovered attempt fails, then a repeat recover sends nothing: its retries stay on their timers", async () => {
    const id = await subscribe('/recover-repeat', [500]);
    const since = new Date(Date.now() - 1000).toISOString();
    const d = await sendTest(id);
    await until(id, d, (x) => x.attempts_made === 1, 'the first attempt to fail');
    expect((await recover(id, { since }).expect(202)).body.data.queued).toBe(1);
    const after = await until(id, d, (x) => x.attempts_made === 2, 'the recovered attempt');
    // It failed with a retry left: pending, on its timer again.
    expect(after).toMatchObject({ status: 'pending', last_response_status: 500 });
    expect(after.next_attempt_at).not.toBeNull();
    for (let i = 0; i < 3; i++) expect((await recover(id, { since }).expect(202)).body.data.queued).toBe(0);
    expect(postsOf('/recover-repeat')).toBe(2);
    expect(await delivery(id, d)).toMatchObject({ status: 'pending', attempts_made: 2 });
    // Retry now on the one delivery is still there.
    await request(hooks.url)
      .post(`/v1/webhooks/${id}/deliveries/${d}/retry`)
      .set(hooks.auth(ACC))
      .expect(202);
    await until(id, d, (x) => x.attempts_made === 3, 'the retried attempt');
    expect(postsOf('/recover-repeat')).toBe(3);
  });

  it('when an account recovers more often than its limit, then 429 RATE_LIMIT_EXCEEDED with Retry-After', async () => {
    const limited = await startWebhooks({
      label: 'wh_recover_limit',
      prefix: broker.prefix,
      worker: false,
      env: { WEBHOOK_RECOVER_PER_MINUTE: '2' },
    });
    try {
      const res = await request(limited.url)
        .post('/v1/webhooks')
        .set(limited.auth(ACC))
        .send({ url: `${receiver.url}/limited`, events: ['signal.new'] })
        .expect(201);
      const statuses: number[] = [];
      let refused: request.Response | undefined;
      // At most two a minute, counted in fixed minutes: the third call is refused, or the fifth
      // when the minute turns after the second (the calls take far less than a minute).
      for (let i = 0; i < 5 && !refused; i++) {
        const r = await request(limited.url)
          .post(`/v1/webhooks/${res.body.data.id}/recover`)
          .set(limited.auth(ACC))
          .send({ since: '2026-01-01T00:00:00Z' });
        statuses.push(r.status);
        if (r.status === 429) refused = r;
      }
      expect(refused?.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(refused?.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused?.body.error.retry_after).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(2);
      // Another account is not limited by this one's calls.
      await request(limited.url)
        .post(`/v1/webhooks/${res.body.data.id}/recover`)
        .set(limited.auth('acc_someone_else'))
        .send({ since: '2026-01-01T00:00:00Z' })
        .expect(404);
    } finally {
      await limited.stop();
    }
  });
});

describe('fair share of retried and recovered work', () => {
  it("when deliveries are recovered, then their attempts are queued behind no one's first attempts: in the due queue, never the first-attempt queue", async () => {
    const own = testBrokerPrefix('wh_recover_lane', removeBrokerPrefix);
    const lane = await startWebhooks({
      label: 'wh_recover_lane',
      prefix: own.prefix,
      env: { WEBHOOK_RETRY_DELAYS_MS: '50' },
    });
    try {
      answers.set('/lane', [500]);
      const created = await request(lane.url)
        .post('/v1/webhooks')
        .set(lane.auth(ACC))
        .send({ url: `${receiver.url}/lane`, events: ['signal.new'] })
        .expect(201);
      const id = created.body.data.id as string;
      const since = new Date(Date.now() - 1000).toISOString();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(
          (await request(lane.url).post(`/v1/webhooks/${id}/test`).set(lane.auth(ACC)).expect(202)).body.data
            .id,
        );
      await waitFor(
        async () => {
          const r = await request(lane.url)
            .get(`/v1/webhooks/${id}/deliveries?status=failed`)
            .set(lane.auth(ACC));
          return r.body.meta?.total === 3;
        },
        20_000,
        50,
        'the deliveries to fail',
      );
      // Without a worker taking them, the recovered attempts stay where they were queued.
      await lane.stopWorker();
      expect(
        (
          await request(lane.url)
            .post(`/v1/webhooks/${id}/recover`)
            .set(lane.auth(ACC))
            .send({ since })
            .expect(202)
        ).body.data.queued,
      ).toBe(3);
      const channel = await lane.deps.amqp.createChannel();
      try {
        const depth = async (queue: string) => (await channel.checkQueue(queue)).messageCount;
        await waitFor(
          async () => (await depth(lane.deps.names.deliveriesDueQueue)) === 3,
          10_000,
          20,
          'the recovered attempts queued',
        );
        expect(await depth(lane.deps.names.deliveriesQueue)).toBe(0);
      } finally {
        await channel.close();
      }
    } finally {
      await lane.stop();
      await own.cleanup();
    }
  });
});

describe('subscription health', () => {
  it('when attempts fail and then succeed, then the subscription shows its last status, since when it failed, and its failures of the last 24 h', async () => {
    const id = await subscribe('/health', [503, 503, 200]);
    const get = async () =>
      webhookSubscriptionSchema.parse(
        (await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC)).expect(200)).body.data,
      );
    expect((await get()).health).toEqual({
      last_delivery_status: null,
      last_delivery_at: null,
      last_response_status: null,
      last_error: null,
      failing_since: null,
      failures_24h: 0,
    });
    const d1 = await sendTest(id);
    await sendTest(id);
    const failing = await waitFor(
      async () => {
        const s = await get();
        return s.health.failures_24h === 2 ? s : undefined;
      },
      20_000,
      50,
      'two failures in the health',
    );
    expect(failing.health).toMatchObject({
      last_delivery_status: 'failed',
      last_response_status: 503,
      last_error: 'http_503',
    });
    expect(failing.health.failing_since).not.toBeNull();
    expect(Date.parse(failing.health.failing_since!)).toBeLessThanOrEqual(
      Date.parse(failing.health.last_delivery_at!),
    );

    await request(hooks.url)
      .post(`/v1/webhooks/${id}/deliveries/${d1}/retry`)
      .set(hooks.auth(ACC))
      .expect(202);
    const healthy = await waitFor(
      async () => {
        const s = await get();
        return s.health.last_delivery_status === 'succeeded' ? s : undefined;
      },
      20_000,
      50,
      'the success in the health',
    );
    expect(healthy.health).toMatchObject({ last_response_status: 200, failing_since: null, failures_24h: 2 });
    const list = await request(hooks.url).get('/v1/webhooks?limit=100').set(hooks.auth(ACC)).expect(200);
    const listed = (list.body.data as Array<{ id: string; health: unknown }>).find((s) => s.id === id);
    expect(listed?.health).toEqual(healthy.health);
  });
});
