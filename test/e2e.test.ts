import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import { IncomingMessage, get } from 'node:http';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { contractChecker, type ContractChecker } from './contract';
import { startGateway, type GatewayHarness } from '../services/api-gateway/test/gateway-harness';
import { signalInput, startSignals, type SignalsHarness } from '../services/signals/test/signals-harness';
import { startStats, type StatsHarness } from '../services/stats/test/stats-harness';
import { startWebhooks, type WebhooksHarness } from '../services/webhooks/test/webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/** A stream opened outside the contract check, held open until destroyed. */
function openRawStream(url: string, key: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { authorization: `Bearer ${key}` }, agent: false }, resolve).once('error', reject);
  });
}

/** The whole system in one process set: a client with an API key, through the gateway only. */
describe('end to end through the gateway', () => {
  const broker = testBrokerPrefix('e2e', removeBrokerPrefix);
  let signals: SignalsHarness;
  let stats: StatsHarness;
  let hooks: WebhooksHarness;
  let gw: GatewayHarness;
  let receiver: Receiver;
  let contract: ContractChecker;
  /** Every response through the gateway in this test, checked against /openapi.json after it. */
  let exchanges: request.Response[] = [];
  /** A client of the gateway whose every exchange the contract check sees. */
  const api = () => {
    const agent = request(gw.url);
    const seen = (t: request.Test) =>
      t.on('response', (r: request.Response) => {
        exchanges.push(r);
      });
    return {
      get: (p: string) => seen(agent.get(p)),
      post: (p: string) => seen(agent.post(p)),
      patch: (p: string) => seen(agent.patch(p)),
      put: (p: string) => seen(agent.put(p)),
      delete: (p: string) => seen(agent.delete(p)),
    };
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    signals = await startSignals('e2e_signals', {}, { prefix: broker.prefix });
    stats = await startStats('e2e_stats', broker.prefix);
    hooks = await startWebhooks({ label: 'e2e_hooks', prefix: broker.prefix });
    gw = await startGateway({
      label: 'e2e_gw',
      upstreams: { signals: signals.url, stats: stats.url, webhooks: hooks.url },
    });
    contract = contractChecker((await request(gw.url).get('/openapi.json').expect(200)).body);
  });
  // The contract test: every request and response of the suite against the generated document
  // (operation known, status declared, declared headers present, body valid), so drift fails.
  afterEach(() => {
    const checked = exchanges;
    exchanges = [];
    expect(checked.length).toBeGreaterThan(0);
    expect(checked.flatMap((r) => contract.problems(r))).toEqual([]);
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
    const created = await api()
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

    const one = await api().get(`/v1/signals/${signalId}`).set(auth).expect(200);
    expect(one.body.data.performance.status).toBe('winner');
    // Deliveries did not count: only our own requests moved the counter. The limits are fixed
    // windows, and a loaded machine can put the two requests in two minutes (X-RateLimit-Reset
    // names the window): then this one is the first of its window.
    const sameWindow = one.headers['x-ratelimit-reset'] === created.headers['x-ratelimit-reset'];
    expect(one.headers['x-ratelimit-remaining']).toBe(sameWindow ? '98' : '99');

    await waitFor(
      async () => (await api().get('/v1/stats?type=premium').set(auth)).body.data?.winners === 1,
      10_000,
      100,
      'stats',
    );
    // The worker records an attempt once the receiver has answered it: the receiver can have both
    // POSTs a moment before the list shows them delivered.
    const statuses = async () =>
      (
        (await api().get(`/v1/webhooks/${webhookId}/deliveries`).set(auth).expect(200)).body.data as Array<{
          status: string;
        }>
      ).map((d) => d.status);
    await waitFor(
      async () => (await statuses()).every((s) => s === 'succeeded'),
      10_000,
      250,
      'both delivered',
    );
    expect(await statuses()).toEqual(['succeeded', 'succeeded']);

    const other = await gw.account();
    await api().get(`/v1/webhooks/${webhookId}`).set('Authorization', `Bearer ${other.key}`).expect(404);
  });

  it('when every public route responds, then its real response validates against /openapi.json', async () => {
    /** The response is the one of this operation (the afterEach validates it against the document). */
    const check = (path: string, method: string, res: request.Response) => {
      expect(contract.operationOf(res)).toEqual({ path, method });
      expect(contract.problems(res)).toEqual([]);
    };
    /** An error response worded as the operation's documented example (all but the request id). */
    const likeExample = (path: string, method: string, res: request.Response) => {
      check(path, method, res);
      const documented = contract.errorExample(path, method, res.status);
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

    check('/v1/signals', 'get', await api().get('/v1/signals').set(auth));
    check('/v1/signals/{signal_id}', 'get', await api().get(`/v1/signals/${signal.body.data.id}`).set(auth));
    check('/v1/signals/{signal_id}', 'get', await api().get('/v1/signals/sig_nope').set(auth));
    likeExample('/v1/signals/{signal_id}', 'get', await api().get('/v1/signals/%ZZ').set(auth));
    // The live stream: opened with a filter, it carries the next matching signal as its webhook
    // payload under the event's name and id; read until that event, then left.
    const streamed = api()
      .get('/v1/signals/stream?type=wallet&events=signal.new')
      .set(auth)
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (/^event: signal\.new$/m.test(text) && text.endsWith('\n\n')) {
            done(null, text);
            // Left once read: the stream never ends by itself.
            if (res instanceof IncomingMessage) res.destroy();
          }
        });
      });
    // Sent now (a supertest request starts on then); it starts live, so signals are ingested
    // until one reaches it.
    let arrived = false;
    const pending = streamed.then((r) => {
      arrived = true;
      return r;
    });
    await waitFor(
      async () => {
        if (arrived) return true;
        await request(signals.url)
          .post('/internal/signals')
          .set(signals.ingestAuth)
          .send(signalInput({ type: 'wallet' }))
          .expect(201);
        return false;
      },
      10_000,
      200,
      'a wallet signal on the stream',
    );
    const live = await pending;
    check('/v1/signals/stream', 'get', live);
    expect([live.status, live.headers['content-type']]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const text = String(live.body);
    expect(text.startsWith('retry: 2000\n\n')).toBe(true);
    const streamedEvent = /id: (\S+)\nevent: signal\.new\ndata: (.+)\n\n/.exec(text);
    expect(streamedEvent?.[1]).toMatch(/^\d+-\d+$/);
    const payload = JSON.parse(streamedEvent?.[2] ?? '{}') as { event: string; data: { type: string } };
    expect([payload.event, payload.data.type]).toEqual(['signal.new', 'wallet']);
    likeExample(
      '/v1/signals/stream',
      'get',
      await api().get('/v1/signals/stream?events=signal.moon').set(auth),
    );
    // The plan's open streams (5 by default) held open: one more is the documented 429.
    const capped = await gw.account();
    const held = await Promise.all(
      Array.from({ length: 5 }, () => openRawStream(`${gw.url}/v1/signals/stream`, capped.key)),
    );
    try {
      expect(held.map((h) => h.statusCode)).toEqual([200, 200, 200, 200, 200]);
      likeExample(
        '/v1/signals/stream',
        'get',
        await api()
          .get('/v1/signals/stream')
          .set({ Authorization: `Bearer ${capped.key}` }),
      );
    } finally {
      for (const h of held) h.destroy();
    }
    check('/v1/stats', 'get', await api().get('/v1/stats?period=7d').set(auth));
    check('/v1/stats', 'get', await api().get('/v1/stats?period=1y').set(auth));
    const created = await api()
      .post('/v1/webhooks')
      .set(auth)
      .send({ url: `${receiver.url}/doc`, events: ['signal.new'] });
    check('/v1/webhooks', 'post', created);
    check(
      '/v1/webhooks',
      'post',
      await api().post('/v1/webhooks').set(auth).send({ url: 'nope', events: [] }),
    );
    likeExample(
      '/v1/webhooks',
      'post',
      await api()
        .post('/v1/webhooks')
        .set(auth)
        .send({ url: `${receiver.url}/doc`, events: [] }),
    );
    // The same Idempotency-Key and body again: the same subscription, 200; another body: 409.
    const once = { url: `${receiver.url}/once`, events: ['signal.new'] };
    const first = await api().post('/v1/webhooks').set(auth).set('Idempotency-Key', 'doc-1').send(once);
    check('/v1/webhooks', 'post', first);
    const replay = await api().post('/v1/webhooks').set(auth).set('Idempotency-Key', 'doc-1').send(once);
    check('/v1/webhooks', 'post', replay);
    expect([first.status, replay.status, replay.body.data.id]).toEqual([201, 200, first.body.data.id]);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    likeExample(
      '/v1/webhooks',
      'post',
      await api()
        .post('/v1/webhooks')
        .set(auth)
        .set('Idempotency-Key', 'doc-1')
        .send({ ...once, events: ['signal.dead'] }),
    );
    const id = created.body.data.id as string;
    // A body is refused on its headers whatever the route needs: not JSON 415, over 64 KiB 413.
    const plain = (req: request.Test) =>
      req.set(auth).set('Content-Type', 'text/plain').send('enabled=false');
    likeExample('/v1/webhooks/{webhook_id}', 'patch', await plain(api().patch(`/v1/webhooks/${id}`)));
    likeExample(
      '/v1/webhooks/{webhook_id}',
      'patch',
      await api()
        .patch(`/v1/webhooks/${id}`)
        .set(auth)
        .send({ description: 'x'.repeat(70_000) }),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/rotate-secret',
      'post',
      await plain(api().post(`/v1/webhooks/${id}/rotate-secret`)),
    );
    likeExample('/v1/webhooks/{webhook_id}/test', 'post', await plain(api().post(`/v1/webhooks/${id}/test`)));
    check('/v1/webhooks', 'get', await api().get('/v1/webhooks').set(auth));
    check('/v1/webhooks/{webhook_id}', 'get', await api().get(`/v1/webhooks/${id}`).set(auth));
    check(
      '/v1/webhooks/{webhook_id}',
      'patch',
      await api()
        .patch(`/v1/webhooks/${id}`)
        .set(auth)
        .send({ types: ['new'] }),
    );
    // An action with an Idempotency-Key through the gateway: its repeat is the first answer again.
    const rotate = () =>
      api().post(`/v1/webhooks/${id}/rotate-secret`).set(auth).set('Idempotency-Key', 'doc-rotate');
    const rotated = await rotate();
    check('/v1/webhooks/{webhook_id}/rotate-secret', 'post', rotated);
    const rotatedAgain = await rotate();
    check('/v1/webhooks/{webhook_id}/rotate-secret', 'post', rotatedAgain);
    expect([rotatedAgain.headers['idempotent-replayed'], rotatedAgain.body.data.secret]).toEqual([
      'true',
      rotated.body.data.secret,
    ]);
    const test = await api().post(`/v1/webhooks/${id}/test`).set(auth);
    check('/v1/webhooks/{webhook_id}/test', 'post', test);
    await waitFor(
      async () =>
        (await api().get(`/v1/webhooks/${id}/deliveries`).set(auth)).body.data?.[0]?.status === 'succeeded',
      10_000,
      100,
      'test delivery',
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries',
      'get',
      await api().get(`/v1/webhooks/${id}/deliveries`).set(auth),
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}',
      'get',
      await api().get(`/v1/webhooks/${id}/deliveries/${test.body.data.id}`).set(auth),
    );
    check(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      'post',
      await api().post(`/v1/webhooks/${id}/deliveries/${test.body.data.id}/retry`).set(auth),
    );
    // A test event in another event's shape: a signed signal.winner sample marked test: true.
    const typed = await api().post(`/v1/webhooks/${id}/test`).set(auth).send({ event: 'signal.winner' });
    check('/v1/webhooks/{webhook_id}/test', 'post', typed);
    expect([typed.status, typed.body.data.event]).toEqual([202, 'signal.winner']);
    await waitFor(
      () => receiver.requests.some((r) => r.path === '/doc' && r.body.includes('"signal.winner"')),
      10_000,
      50,
      'typed test delivery',
    );
    const sample = receiver.requests.find((r) => r.path === '/doc' && r.body.includes('"signal.winner"'))!;
    const sampled = JSON.parse(sample.body) as {
      event: string;
      data: { test?: boolean; performance?: object };
    };
    expect([sampled.event, sampled.data.test, typeof sampled.data.performance]).toEqual([
      'signal.winner',
      true,
      'object',
    ]);
    likeExample(
      '/v1/webhooks/{webhook_id}/test',
      'post',
      await api().post(`/v1/webhooks/${id}/test`).set(auth).send({ event: 'signal.moon' }),
    );
    // Recovery: nothing of this subscription failed, so nothing is queued; a bad `since` is a 400.
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const recovered = await api().post(`/v1/webhooks/${id}/recover`).set(auth).send({ since });
    check('/v1/webhooks/{webhook_id}/recover', 'post', recovered);
    expect([recovered.status, recovered.body.data.queued]).toEqual([202, 0]);
    likeExample(
      '/v1/webhooks/{webhook_id}/recover',
      'post',
      await api().post(`/v1/webhooks/${id}/recover`).set(auth).send({ since: 'yesterday' }),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/recover',
      'post',
      await api().post('/v1/webhooks/wh_01KAB3K0C9D1E2F3G4H5J6K7M8/recover').set(auth).send({ since }),
    );
    await api().patch(`/v1/webhooks/${id}`).set(auth).send({ enabled: false }).expect(200);
    likeExample(
      '/v1/webhooks/{webhook_id}/recover',
      'post',
      await api().post(`/v1/webhooks/${id}/recover`).set(auth).send({ since }),
    );
    likeExample(
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      'post',
      await plain(api().post(`/v1/webhooks/${id}/deliveries/${test.body.data.id}/retry`)),
    );
    likeExample('/v1/webhooks/{webhook_id}', 'delete', await plain(api().delete(`/v1/webhooks/${id}`)));
    check('/v1/webhooks/{webhook_id}', 'delete', await api().delete(`/v1/webhooks/${id}`).set(auth));

    const account = await gw.account(undefined, 'pw-openapi-2');
    const login = await api().post('/v1/auth/login').send({ email: account.email, password: 'pw-openapi-2' });
    check('/v1/auth/login', 'post', login);
    likeExample(
      '/v1/auth/login',
      'post',
      await api().post('/v1/auth/login').send({ email: account.email, password: 'not-it' }),
    );
    likeExample('/v1/auth/login', 'post', await api().post('/v1/auth/login').send({ email: account.email }));
    likeExample('/v1/account/keys', 'get', await api().get('/v1/account/keys'));
    const session = { Authorization: `Bearer ${login.body.data.token}` };
    const newKey = await api()
      .post('/v1/account/keys')
      .set(session)
      .set('Idempotency-Key', 'doc-key')
      .send({ name: 'doc' });
    check('/v1/account/keys', 'post', newKey);
    const sameKey = await api()
      .post('/v1/account/keys')
      .set(session)
      .set('Idempotency-Key', 'doc-key')
      .send({ name: 'doc' });
    check('/v1/account/keys', 'post', sameKey);
    expect([newKey.status, sameKey.status, sameKey.body.data.id]).toEqual([201, 200, newKey.body.data.id]);
    likeExample(
      '/v1/account/keys',
      'post',
      await api()
        .post('/v1/account/keys')
        .set(session)
        .set('Idempotency-Key', 'doc-key')
        .send({ name: 'other' }),
    );
    likeExample(
      '/v1/account/keys/{key_id}',
      'delete',
      await api().delete('/v1/account/keys/%ZZ').set(session),
    );
    check('/v1/account/keys', 'get', await api().get('/v1/account/keys').set(session));
    const rolled = await api()
      .post(`/v1/account/keys/${newKey.body.data.id}/roll`)
      .set(session)
      .send({ overlap_seconds: 0 });
    check('/v1/account/keys/{key_id}/roll', 'post', rolled);
    expect(rolled.status).toBe(201);
    likeExample(
      '/v1/account/keys/{key_id}/roll',
      'post',
      await api()
        .post(`/v1/account/keys/${newKey.body.data.id}/roll`)
        .set(session)
        .send({ overlap_seconds: 30 }),
    );
    const renamed = await api()
      .patch(`/v1/account/keys/${rolled.body.data.created.id}`)
      .set(session)
      .send({ name: 'doc (renamed)' });
    check('/v1/account/keys/{key_id}', 'patch', renamed);
    expect([renamed.status, renamed.body.data.name]).toEqual([200, 'doc (renamed)']);
    likeExample(
      '/v1/account/keys/{key_id}',
      'patch',
      await api().patch(`/v1/account/keys/${rolled.body.data.created.id}`).set(session).send({ name: '' }),
    );
    check(
      '/v1/account/keys/{key_id}',
      'delete',
      await api().delete(`/v1/account/keys/${rolled.body.data.created.id}`).set(session),
    );
    check('/v1/signals', 'get', await api().get('/v1/signals'));
    const changed = await api()
      .post('/v1/account/password')
      .set(session)
      .send({ current_password: 'pw-openapi-2', new_password: 'a new long passphrase' });
    check('/v1/account/password', 'post', changed);
    check(
      '/v1/auth/logout',
      'post',
      await api()
        .post('/v1/auth/logout')
        .set({ Authorization: `Bearer ${changed.body.data.token}` }),
    );
    // Every documented operation was exercised here, so the afterEach held each to the document.
    const exercised = new Set(
      exchanges.map((r) => contract.operationOf(r)).map((o) => (o ? `${o.method} ${o.path}` : '')),
    );
    const documented = Object.entries(contract.document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`),
    );
    expect(documented.filter((op) => !exercised.has(op))).toEqual([]);
  });

  it('when a known path is asked with a method it does not take, then the response is 405 naming the methods it does, in Allow as OPTIONS names them', async () => {
    const { key } = await gw.account();
    const auth = { Authorization: `Bearer ${key}` };
    const put = await api().put('/v1/signals').set(auth).send({});
    expect([put.status, put.headers.allow, put.body.error.code]).toEqual([
      405,
      'GET, HEAD, OPTIONS',
      'METHOD_NOT_ALLOWED',
    ]);
    const postStats = await api().post('/v1/stats').set(auth).send({});
    expect([postStats.status, postStats.headers.allow]).toEqual([405, 'GET, HEAD, OPTIONS']);
    const hook = await api().put('/v1/webhooks/wh_01KAB3K0C9D1E2F3G4H5J6K7M8').set(auth).send({});
    expect([hook.status, hook.headers.allow]).toEqual([405, 'GET, HEAD, PATCH, DELETE, OPTIONS']);
    const login = await api().get('/v1/auth/login');
    expect([login.status, login.headers.allow]).toEqual([405, 'POST, OPTIONS']);
  });

  it('when an account spends its minute, then the 429 carries Retry-After and the headers the document declares', async () => {
    const { key } = await gw.account({ per_minute: 1, per_day: 100 });
    const auth = { Authorization: `Bearer ${key}` };
    const responses = [await api().get('/v1/stats').set(auth), await api().get('/v1/stats').set(auth)];
    const limited = responses.find((r) => r.status === 429) ?? (await api().get('/v1/stats').set(auth));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBe(limited.body.error.retry_after);
    // The afterEach checks it against the document: declared status, Retry-After and X-RateLimit-* present.
  });
});
