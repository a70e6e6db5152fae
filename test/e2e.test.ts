import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
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

  it('when every public route answers, then its real response validates against /openapi.json', async () => {
    const doc = (await request(gw.url).get('/openapi.json').expect(200)).body;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'api', components: doc.components }, 'api');
    const check = (path: string, method: string, res: request.Response) => {
      const spec = doc.paths[path]?.[method]?.responses?.[String(res.status)];
      expect({ path, method, status: res.status, documented: Boolean(spec) }).toEqual({
        path,
        method,
        status: res.status,
        documented: true,
      });
      const schema = spec.content['application/json'].schema;
      // Inline envelopes refer to components of the document: point those refs at the added 'api' schema.
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"api#/components/')),
      );
      if (!validate(res.body))
        throw new Error(`${method} ${path} ${res.status}: ${ajv.errorsText(validate.errors)}`);
    };
    /** An error answer worded as the operation's documented example (all but the request id). */
    const likeExample = (path: string, method: string, res: request.Response) => {
      check(path, method, res);
      const example =
        doc.paths[path][method].responses[String(res.status)].content['application/json'].example;
      const { request_id: _id, ...documented } = example.error;
      const { request_id: _real, ...real } = res.body.error;
      expect({ path, method, error: real }).toEqual({ path, method, error: documented });
    };
    const { key } = await gw.account(undefined, 'pw-openapi');
    const auth = { Authorization: `Bearer ${key}` };
    const signal = await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput())
      .expect(201);

    check('/v1/signals', 'get', await request(gw.url).get('/v1/signals').set(auth));
    check(
      '/v1/signals/{signal_id}',
      'get',
      await request(gw.url).get(`/v1/signals/${signal.body.data.id}`).set(auth),
    );
    check('/v1/signals/{signal_id}', 'get', await request(gw.url).get('/v1/signals/sig_nope').set(auth));
    likeExample('/v1/signals/{signal_id}', 'get', await request(gw.url).get('/v1/signals/%ZZ').set(auth));
    check('/v1/stats', 'get', await request(gw.url).get('/v1/stats?period=7d').set(auth));
    check('/v1/stats', 'get', await request(gw.url).get('/v1/stats?period=1y').set(auth));
    const created = await request(gw.url)
      .post('/v1/webhooks')
      .set(auth)
      .send({ url: `${receiver.url}/doc`, events: ['signal.new'] });
    check('/v1/webhooks', 'post', created);
    check(
      '/v1/webhooks',
      'post',
      await request(gw.url).post('/v1/webhooks').set(auth).send({ url: 'nope', events: [] }),
    );
    likeExample(
      '/v1/webhooks',
      'post',
      await request(gw.url)
        .post('/v1/webhooks')
        .set(auth)
        .send({ url: `${receiver.url}/doc`, events: [] }),
    );
    // The same Idempotency-Key and body again: the same subscription, 200; another body: 409.
    const once = { url: `${receiver.url}/once`, events: ['signal.new'] };
    const first = await request(gw.url)
      .post('/v1/webhooks')
      .set(auth)
      .set('Idempotency-Key', 'doc-1')
      .send(once);
    check('/v1/webhooks', 'post', first);
    const replay = await request(gw.url)
      .post('/v1/webhooks')
      .set(auth)
      .set('Idempotency-Key', 'doc-1')
      .send(once);
    check('/v1/webhooks', 'post', replay);
    expect([first.status, replay.status, replay.body.data.id]).toEqual([201, 200, first.body.data.id]);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    likeExample(
      '/v1/webhooks',
      'post',
      await request(gw.url)
        .post('/v1/webhooks')
        .set(auth)
        .set('Idempotency-Key', 'doc-1')
        .send({ ...once, events: ['signal.dead'] }),
    );
    const id = created.body.data.id as string;
    // A body is refused on its headers whatever the route needs: not JSON 415, over 64 KiB 413.
    const plain = (req: request.Test) =>
      req.set(auth).set('Content-Type', 'text/plain').send('enabled=false');
    likeExample(
      '/v1/webhooks/{webhook_id}',
      'patch',
      await plain(request(gw.url).patch(`/v1/webhooks/${id}`)),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}',
      'patch',
      await request(gw.url)
        .patch(`/v1/webhooks/${id}`)
        .set(auth)
        .send({ description: 'x'.repeat(70_000) }),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/rotate-secret',
      'post',
      await plain(request(gw.url).post(`/v1/webhooks/${id}/rotate-secret`)),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/test',
      'post',
      await plain(request(gw.url).post(`/v1/webhooks/${id}/test`)),
    );
    check('/v1/webhooks', 'get', await request(gw.url).get('/v1/webhooks').set(auth));
    check('/v1/webhooks/{webhook_id}', 'get', await request(gw.url).get(`/v1/webhooks/${id}`).set(auth));
    check(
      '/v1/webhooks/{webhook_id}',
      'patch',
      await request(gw.url)
        .patch(`/v1/webhooks/${id}`)
        .set(auth)
        .send({ types: ['new'] }),
    );
    check(
      '/v1/webhooks/{webhook_id}/rotate-secret',
      'post',
      await request(gw.url).post(`/v1/webhooks/${id}/rotate-secret`).set(auth),
    );
    const test = await request(gw.url).post(`/v1/webhooks/${id}/test`).set(auth);
    check('/v1/webhooks/{webhook_id}/test', 'post', test);
    await waitFor(
      async () =>
        (await request(gw.url).get(`/v1/webhooks/${id}/deliveries`).set(auth)).body.data?.[0]?.status ===
        'succeeded',
      10_000,
      100,
      'test delivery',
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries',
      'get',
      await request(gw.url).get(`/v1/webhooks/${id}/deliveries`).set(auth),
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}',
      'get',
      await request(gw.url).get(`/v1/webhooks/${id}/deliveries/${test.body.data.id}`).set(auth),
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      'post',
      await request(gw.url).post(`/v1/webhooks/${id}/deliveries/${test.body.data.id}/retry`).set(auth),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      'post',
      await plain(request(gw.url).post(`/v1/webhooks/${id}/deliveries/${test.body.data.id}/retry`)),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}',
      'delete',
      await plain(request(gw.url).delete(`/v1/webhooks/${id}`)),
    );
    check(
      '/v1/webhooks/{webhook_id}',
      'delete',
      await request(gw.url).delete(`/v1/webhooks/${id}`).set(auth),
    );

    const account = await gw.account(undefined, 'pw-openapi-2');
    const login = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email: account.email, password: 'pw-openapi-2' });
    check('/v1/auth/login', 'post', login);
    likeExample(
      '/v1/auth/login',
      'post',
      await request(gw.url).post('/v1/auth/login').send({ email: account.email, password: 'not-it' }),
    );
    likeExample(
      '/v1/auth/login',
      'post',
      await request(gw.url).post('/v1/auth/login').send({ email: account.email }),
    );
    likeExample('/v1/account/keys', 'get', await request(gw.url).get('/v1/account/keys'));
    const session = { Authorization: `Bearer ${login.body.data.token}` };
    const newKey = await request(gw.url)
      .post('/v1/account/keys')
      .set(session)
      .set('Idempotency-Key', 'doc-key')
      .send({ name: 'doc' });
    check('/v1/account/keys', 'post', newKey);
    const sameKey = await request(gw.url)
      .post('/v1/account/keys')
      .set(session)
      .set('Idempotency-Key', 'doc-key')
      .send({ name: 'doc' });
    check('/v1/account/keys', 'post', sameKey);
    expect([newKey.status, sameKey.status, sameKey.body.data.id]).toEqual([201, 200, newKey.body.data.id]);
    likeExample(
      '/v1/account/keys',
      'post',
      await request(gw.url)
        .post('/v1/account/keys')
        .set(session)
        .set('Idempotency-Key', 'doc-key')
        .send({ name: 'other' }),
    );
    likeExample(
      '/v1/account/keys/{key_id}',
      'delete',
      await request(gw.url).delete('/v1/account/keys/%ZZ').set(session),
    );
    check('/v1/account/keys', 'get', await request(gw.url).get('/v1/account/keys').set(session));
    check(
      '/v1/account/keys/{key_id}',
      'delete',
      await request(gw.url).delete(`/v1/account/keys/${newKey.body.data.id}`).set(session),
    );
    check('/v1/signals', 'get', await request(gw.url).get('/v1/signals'));
  });
});
