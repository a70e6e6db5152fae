import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { webhookCollections } from '../src/data/webhook.models';
import { publishEventAt } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * Deliveries are kept for the retention (WEBHOOK_RETENTION_MS, from the event's time), then
 * removed with their attempts. Here the retention is a day and the worker sweeps every 100 ms: an
 * event two days old is delivered, then its delivery is gone from every read; a fresh one stays.
 */
const DAY_MS = 86_400_000;
const broker = testBrokerPrefix('wh_retention', removeBrokerPrefix);
let hooks: WebhooksHarness;
let receiver: Receiver;
const ACC = 'acc_retention';

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_retention',
    prefix: broker.prefix,
    env: { WEBHOOK_RETENTION_MS: String(DAY_MS), WEBHOOK_RETENTION_SWEEP_MS: '100' },
  });
  receiver = await startReceiver(() => ({ status: 200 }));
});
afterAll(async () => {
  await hooks.stop();
  await receiver.close();
  await broker.cleanup();
});

/** A subscription of the account to `signal.new` at the receiver's `path`; its id. */
async function subscribe(path: string): Promise<string> {
  const created = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url: `${receiver.url}${path}`, events: ['signal.new'] })
    .expect(201);
  return created.body.data.id as string;
}

/** Deliveries the worker's sweeps removed, as its metrics count them. */
const removedCount = async () => (await metrics.webhookDeliveriesRemoved().get()).values[0]?.value ?? 0;

describe('delivery retention', () => {
  it('when a delivery’s event is older than the retention, then it is sent, then gone from the list, by id and from retry, while a fresh one stays', async () => {
    const webhookId = await subscribe('/hook');
    const removedBefore = await removedCount();
    const fresh = await publishEventAt(broker.prefix, new Date());
    const old = await publishEventAt(broker.prefix, new Date(Date.now() - 2 * DAY_MS));

    // Retention removes what was kept of a delivery, never the delivery itself: both are sent.
    await waitFor(() => receiver.requests.length >= 2, 30_000, 20, 'both events delivered');
    const sentOld = receiver.requests.find((r) => r.body.includes(old.signalId));
    const sentFresh = receiver.requests.find((r) => r.body.includes(fresh.signalId));
    const oldDeliveryId = String(sentOld?.headers['webhook-id']);
    const freshDeliveryId = String(sentFresh?.headers['webhook-id']);
    expect(oldDeliveryId).toMatch(/^dlv_/);
    expect(freshDeliveryId).toMatch(/^dlv_/);

    const list = () =>
      request(hooks.url).get(`/v1/webhooks/${webhookId}/deliveries`).set(hooks.auth(ACC)).expect(200);
    await waitFor(
      async () => {
        const page = await list();
        return page.body.meta.total === 1 && page.body.data[0]?.id === freshDeliveryId;
      },
      30_000,
      50,
      'the old delivery removed from the list and the fresh one kept',
    );
    const page = await list();
    expect(page.body.data.map((d: { event_id: string }) => d.event_id)).toEqual([fresh.eventId]);
    expect(page.body.data[0].status).toBe('succeeded');

    const gone = await request(hooks.url)
      .get(`/v1/webhooks/${webhookId}/deliveries/${oldDeliveryId}`)
      .set(hooks.auth(ACC))
      .expect(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
    await request(hooks.url)
      .post(`/v1/webhooks/${webhookId}/deliveries/${oldDeliveryId}/retry`)
      .set(hooks.auth(ACC))
      .expect(404);
    const kept = await request(hooks.url)
      .get(`/v1/webhooks/${webhookId}/deliveries/${freshDeliveryId}`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(kept.body.data.attempts).toHaveLength(1);
    // Nothing kept of the old one outlives it: an attempt recorded after its delivery went (the
    // sweep may come between the POST and its record) goes at the next sweep.
    const leftovers = async () => {
      let n = 0;
      for (const coll of webhookCollections(hooks.deps.mongo).deliveryLed)
        n += await coll.countDocuments({ _id: { $gte: oldDeliveryId, $lt: `${oldDeliveryId};` } });
      return n;
    };
    await waitFor(async () => (await leftovers()) === 0, 30_000, 50, 'no log entry, claim or open mark left');
    expect(await leftovers()).toBe(0);
    // The removal is counted where an operator sees it.
    expect((await removedCount()) - removedBefore).toBeGreaterThanOrEqual(1);
  });

  it('when an account recovered in a window that has ended, then that window’s count goes at the next sweep and the current one stays', async () => {
    const webhookId = await subscribe('/recover');
    await request(hooks.url)
      .post(`/v1/webhooks/${webhookId}/recover`)
      .set(hooks.auth(ACC))
      .send({ since: new Date(Date.now() - 3_600_000).toISOString() })
      .expect(202);
    const counts = webhookCollections(hooks.deps.mongo).recoverCalls;
    const [current] = await counts.find({ _id: { $regex: `^${ACC}:` } }).toArray();
    expect(current?.calls).toBe(1);
    // A count of an earlier minute, as an account's later recover leaves it when minutes passed
    // between (only the window just before a call's own is dropped by the call).
    const endedAt = Date.now() - 10 * 60_000;
    const ended = `${ACC}:${endedAt - 60_000}`;
    await counts.insertOne({ _id: ended, calls: 3, expires_at: new Date(endedAt) });
    await waitFor(
      async () => (await counts.countDocuments({ _id: ended })) === 0,
      30_000,
      50,
      'the ended window removed',
    );
    expect(await counts.findOne({ _id: current?._id })).toMatchObject({ calls: 1 });
  });
});
