import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { startGateway, type GatewayHarness } from '../services/api-gateway/test/gateway-harness';
import { signalInput, startSignals, type SignalsHarness } from '../services/signals/test/signals-harness';
import { startStats, type StatsHarness } from '../services/stats/test/stats-harness';
import { startWebhooks, type WebhooksHarness } from '../services/webhooks/test/webhooks-harness';

/** The whole system in one process set: a client with an API key, through the gateway only. */
describe('end to end through the gateway', () => {
  const broker = testBrokerPrefix('e2e');
  let signals: SignalsHarness;
  let stats: StatsHarness;
  let hooks: WebhooksHarness;
  let gw: GatewayHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    signals = await startSignals('e2e_signals', {}, { prefix: broker.prefix });
    stats = await startStats('e2e_stats', broker.prefix);
    hooks = await startWebhooks({ label: 'e2e_hooks', prefix: broker.prefix });
    gw = await startGateway({
      label: 'e2e_gw',
      upstreams: { signals: signals.url, stats: stats.url, webhooks: hooks.url },
    });
  });
  afterAll(async () => {
    await gw.stop();
    await hooks.stop();
    await stats.stop();
    await signals.stop();
    await receiver.close();
    await broker.cleanup();
  });

  it('when a client subscribes with an API key and a signal is ingested, then the signed signal.new arrives, stats count it, and deliveries cost no quota', async () => {
    const { key } = await gw.account({ per_minute: 100, per_day: 1000 });
    const auth = { Authorization: `Bearer ${key}` };
    const created = await request(gw.url)
      .post('/v1/webhooks')
      .set(auth)
      .send({ url: `${receiver.url}/e2e`, events: ['signal.new', 'signal.winner'], types: ['premium'] })
      .expect(201);
    const { id: webhookId, secret } = created.body.data as { id: string; secret: string };
    expect(created.headers['x-ratelimit-remaining']).toBe('99');

    const ingested = await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput({ type: 'premium', is_premium: true }))
      .expect(201);
    const signalId = ingested.body.data.id as string;
    await request(signals.url)
      .post(`/internal/signals/${signalId}/status`)
      .set(signals.ingestAuth)
      .send({ status: 'winner' })
      .expect(200);

    await waitFor(() => receiver.requests.length >= 2, 10_000, 50, 'two deliveries');
    const events = receiver.requests.map(
      (r) =>
        new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
          event: string;
          data: { id: string };
        },
    );
    expect(events.map((e) => e.event).sort()).toEqual(['signal.new', 'signal.winner']);
    expect(events.every((e) => e.data.id === signalId)).toBe(true);

    const one = await request(gw.url).get(`/v1/signals/${signalId}`).set(auth).expect(200);
    expect(one.body.data.performance.status).toBe('winner');
    // Deliveries did not count: only our own requests moved the counter.
    expect(one.headers['x-ratelimit-remaining']).toBe('98');

    await waitFor(
      async () => (await request(gw.url).get('/v1/stats?type=premium').set(auth)).body.data?.winners === 1,
      10_000,
      100,
      'stats',
    );
    const deliveries = await request(gw.url)
      .get(`/v1/webhooks/${webhookId}/deliveries`)
      .set(auth)
      .expect(200);
    expect(deliveries.body.data.map((d: { status: string }) => d.status)).toEqual(['succeeded', 'succeeded']);

    const other = await gw.account();
    await request(gw.url)
      .get(`/v1/webhooks/${webhookId}`)
      .set('Authorization', `Bearer ${other.key}`)
      .expect(404);
  });
});
