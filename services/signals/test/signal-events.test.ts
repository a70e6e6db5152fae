import { signalEventSchema, type SignalEvent } from '@signal/contracts';
import { removeBrokerPrefix, brokerNames } from '@signal/messaging';
import {
  infraUrls,
  startTcpProxy,
  testBrokerPrefix,
  viaProxy,
  waitFor,
  type TcpProxy,
} from '@signal/test-kit';
import { connect, type ChannelModel } from 'amqplib';
import request from 'supertest';
import { newId } from '@signal/service-kit';
import { outboxBatchCollection } from '../src/data/collections';
import { signalInput, startSignals, type SignalsHarness } from './signals-harness';

/** Collects every event on the prefix's exchange through a queue of the test's own. */
async function collectEvents(prefix: string) {
  const conn: ChannelModel = await connect(infraUrls().amqpUrl);
  const ch = await conn.createChannel();
  const exchange = brokerNames(prefix).signalEvents;
  await ch.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await ch.assertQueue('', { exclusive: true });
  await ch.bindQueue(queue, exchange, 'signal.*');
  const events: Array<{ event: SignalEvent; messageId: unknown }> = [];
  await ch.consume(queue, (m) => {
    if (!m) return;
    events.push({
      event: signalEventSchema.parse(JSON.parse(m.content.toString())),
      messageId: m.properties.messageId,
    });
    ch.ack(m);
  });
  return { events, close: () => conn.close() };
}

describe('signal events', () => {
  const broker = testBrokerPrefix('sig_events', removeBrokerPrefix);
  let proxy: TcpProxy;
  let svc: SignalsHarness;
  let collector: Awaited<ReturnType<typeof collectEvents>>;

  beforeAll(async () => {
    const amqp = new URL(infraUrls().amqpUrl);
    proxy = await startTcpProxy(amqp.hostname, Number(amqp.port || 5672));
    collector = await collectEvents(broker.prefix);
    svc = await startSignals(
      'sig_events',
      // The orphan-batch test waits for a sweep: every 0.5 s here (5 s by default).
      { AMQP_URL: viaProxy(infraUrls().amqpUrl, proxy), OUTBOX_SWEEP_INTERVAL_MS: '500' },
      { prefix: broker.prefix },
    );
    await svc.deps.amqp.waitUntilConnected();
  });
  afterAll(async () => {
    await svc.stop();
    await collector.close();
    await proxy.close();
    await broker.cleanup();
  });

  it('when a signal is created and moves, then signal.new, signal.updated and signal.winner arrive in order with the snapshot', async () => {
    const res = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send(signalInput({ type: 'wallet' }))
      .expect(201);
    const id = res.body.data.id as string;
    await request(svc.url)
      .patch(`/internal/signals/${id}`)
      .set(svc.ingestAuth)
      .send({ metrics: { mcap_current: 300_000 } })
      .expect(200);
    await request(svc.url)
      .post(`/internal/signals/${id}/status`)
      .set(svc.ingestAuth)
      .send({ status: 'winner' })
      .expect(200);
    await waitFor(
      () => collector.events.filter((e) => e.event.signal.id === id).length === 3,
      10_000,
      50,
      'three events',
    );
    const mine = collector.events.filter((e) => e.event.signal.id === id);
    expect(mine.map((e) => e.event.name)).toEqual(['signal.new', 'signal.updated', 'signal.winner']);
    expect(mine.map((e) => e.event.signal.version)).toEqual([1, 2, 3]);
    expect(mine[2]!.event.signal.performance).toMatchObject({ status: 'winner', roi: 200 });
    for (const e of mine) expect(e.messageId).toBe(e.event.id);
    await waitFor(
      async () => (await svc.deps.repository.findPendingOutbox(10)).length === 0,
      5000,
      50,
      'an empty outbox',
    );
  });

  it('when history is backfilled in bulk, then each signal is announced once as signal.updated (never signal.new) and the batch outbox empties', async () => {
    const res = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .send({
        signals: Array.from({ length: 40 }, (_, i) =>
          signalInput({
            created_at: new Date(Date.now() - (i + 1) * 3_600_000).toISOString(),
            performance: { status: i % 2 ? 'winner' : 'dead' },
          }),
        ),
      })
      .expect(201);
    const ids = new Set<string>(res.body.data.ids);
    expect(ids.size).toBe(40);
    await waitFor(
      () => collector.events.filter((e) => ids.has(e.event.signal.id)).length === 40,
      10_000,
      50,
      'forty events',
    );
    const mine = collector.events.filter((e) => ids.has(e.event.signal.id));
    expect(new Set(mine.map((e) => e.event.name))).toEqual(new Set(['signal.updated']));
    expect(new Set(mine.map((e) => e.event.signal.id)).size).toBe(40);
    await waitFor(
      async () => (await outboxBatchCollection(svc.deps.mongo).countDocuments({})) === 0,
      5000,
      50,
      'the batch outbox to empty',
    );
  });

  it("when a bulk writer died between its batch and its signals, then the sweep announces the stored signals only, under the batch's event ids", async () => {
    const res = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .send({ signals: [signalInput(), signalInput()] })
      .expect(201);
    const [a, b] = res.body.data.ids as string[];
    // What a writer that died after its batch (naming three signals) but before storing the
    // third leaves behind, a minute and more ago.
    const batches = outboxBatchCollection(svc.deps.mongo);
    const eventIds = [newId('evt'), newId('evt'), newId('evt')];
    const never = newId('sig');
    await batches.insertOne({
      _id: newId('obx'),
      entries: [a!, b!, never].map((signal_id, i) => ({ signal_id, event_id: eventIds[i]! })),
      event_name: 'signal.updated',
      occurred_at: new Date(Date.now() - 120_000),
      created_at: new Date(Date.now() - 120_000),
    });
    await waitFor(
      () => eventIds.slice(0, 2).every((id) => collector.events.some((e) => e.event.id === id)),
      15_000,
      50,
      'the orphan batch to be swept',
    );
    const swept = collector.events.filter((e) => eventIds.includes(e.event.id));
    expect(swept.map((e) => [e.event.name, e.event.signal.id]).sort()).toEqual(
      [
        ['signal.updated', a],
        ['signal.updated', b],
      ].sort(),
    );
    await waitFor(async () => (await batches.countDocuments({})) === 0, 5000, 50, 'the batch to be deleted');
    expect(collector.events.some((e) => e.event.signal.id === never)).toBe(false);
  });

  it('when RabbitMQ is unreachable, then 500 creates are stored and readable, and on return exactly one event per signal arrives', async () => {
    collector.events.length = 0;
    proxy.cut();
    await waitFor(() => !svc.deps.amqp.connected, 5000, 20, 'the relay to notice the outage');
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, () =>
          request(svc.url).post('/internal/signals').set(svc.ingestAuth).send(signalInput()),
        ),
      );
      for (const r of batch) {
        expect(r.status).toBe(201);
        ids.push(r.body.data.id);
      }
    }
    const list = await request(svc.url)
      .get('/v1/signals?limit=100')
      .set('Authorization', `Bearer ${svc.token()}`)
      .expect(200);
    expect(list.body.meta.total).toBeGreaterThanOrEqual(500);
    await request(svc.url)
      .get(`/v1/signals/${ids[499]}`)
      .set('Authorization', `Bearer ${svc.token()}`)
      .expect(200);
    expect(collector.events.filter((e) => ids.includes(e.event.signal.id))).toHaveLength(0);

    proxy.restore();
    await waitFor(
      () => new Set(collector.events.map((e) => e.event.signal.id)).size >= 500,
      30_000,
      100,
      '500 events',
    );
    await new Promise((r) => setTimeout(r, 500)); // room for any duplicate to show up
    const newEvents = collector.events.filter((e) => e.event.name === 'signal.new');
    const eventIds = newEvents.map((e) => e.event.id);
    expect(new Set(eventIds).size).toBe(eventIds.length);
    expect(newEvents.map((e) => e.event.signal.id).sort()).toEqual([...ids].sort());
    await waitFor(
      async () => (await svc.deps.repository.findPendingOutbox(10)).length === 0,
      10_000,
      100,
      'an empty outbox',
    );
  });
});
