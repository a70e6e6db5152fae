import { apiKeySchema } from '@signal/contracts';
import { valueOrThrow } from '@signal/service-kit';
import {
  infraUrls,
  startOfAMinuteIfLate,
  startTcpProxy,
  viaProxy,
  waitFor,
  type TcpProxy,
} from '@signal/test-kit';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { signalInput, startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { createApiKey } from '../src/accounts/domain/accounts.use-cases';
import { startGateway, type GatewayHarness } from './gateway-harness';

let signals: SignalsHarness;
let gw: GatewayHarness;

beforeAll(async () => {
  signals = await startSignals('gw_account');
  await request(signals.url)
    .post('/internal/signals')
    .set(signals.ingestAuth)
    .send(signalInput())
    .expect(201);
  gw = await startGateway({
    label: 'gw_account',
    upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
    env: { IP_RATE_LIMIT_PER_MINUTE: '500' },
  });
});
afterAll(async () => {
  await gw.stop();
  await signals.stop();
});

async function session(email: string, password: string): Promise<string> {
  const res = await request(gw.url).post('/v1/auth/login').send({ email, password }).expect(200);
  return res.body.data.token as string;
}

describe('account API (dashboard)', () => {
  it('when a holder logs in and creates a key, then it is shown once, works at once, lists without secrets, and revokes', async () => {
    const { email } = await gw.account(undefined, 'correct horse battery');
    const token = await session(email, 'correct horse battery');
    const created = await request(gw.url)
      .post('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: 'production' })
      .expect(201);
    const key = created.body.data.key as string;
    expect(key).toMatch(/^sk_live_/);
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);

    const list = await request(gw.url)
      .get('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(list.body.data).toHaveLength(2);
    expect(list.body.meta).toEqual({ total: 2, page: 1, per_page: 100, total_pages: 1 });
    for (const k of list.body.data) apiKeySchema.parse(k);
    expect(JSON.stringify(list.body)).not.toContain(key);
    expect(JSON.stringify(list.body)).not.toMatch(/hash/);
    const listed = list.body.data.find((k: { id: string }) => k.id === created.body.data.id);
    expect(listed.prefix).toBe(key.slice(0, 14));
    expect([created.body.data.status, listed.status]).toEqual(['active', 'active']);

    const revoked = await request(gw.url)
      .delete(`/v1/account/keys/${created.body.data.id}`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(revoked.body.data.revoked_at).not.toBeNull();
    expect(revoked.body.data.status).toBe('revoked');
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(401);
  });

  it('when a key is revoked with a body that is not JSON, then 400 naming the body, and the key still works', async () => {
    const { email } = await gw.account(undefined, 'broken bodies');
    const token = await session(email, 'broken bodies');
    const created = await request(gw.url)
      .post('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: 'kept' })
      .expect(201);
    const refused = await request(gw.url)
      .delete(`/v1/account/keys/${created.body.data.id}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send('{{{')
      .expect(400);
    expect(refused.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'The request body is not valid JSON.',
    });
    await request(gw.url)
      .get('/v1/signals')
      .set('Authorization', `Bearer ${created.body.data.key}`)
      .expect(200);
  });

  it('when a key is named with control characters or a text-direction mark, then 400 naming name, and no key is made', async () => {
    const { email } = await gw.account(undefined, 'hidden characters');
    const auth = { Authorization: `Bearer ${await session(email, 'hidden characters')}` };
    for (const name of ['a\u001b[31mb', 'invoice\u202efdp.exe']) {
      const res = await request(gw.url).post('/v1/account/keys').set(auth).send({ name }).expect(400);
      expect(res.body.error.details).toEqual([
        {
          field: 'name',
          message: 'name must not contain control characters or text-direction marks (such as U+202E)',
        },
      ]);
    }
    const list = await request(gw.url).get('/v1/account/keys').set(auth).expect(200);
    expect(list.body.meta.total).toBe(1);
  });

  it('when the keys are listed by page, then each page carries meta, and unknown or bad parameters are a 400', async () => {
    const { email } = await gw.account(undefined, 'paging passphrase');
    const token = await session(email, 'paging passphrase');
    for (const name of ['b', 'c'])
      await request(gw.url)
        .post('/v1/account/keys')
        .set('Authorization', `Bearer ${token}`)
        .send({ name })
        .expect(201);
    const list = (qs: string) =>
      request(gw.url).get(`/v1/account/keys${qs}`).set('Authorization', `Bearer ${token}`);
    const all = (await list('').expect(200)).body.data.map((k: { id: string }) => k.id);
    expect(all).toHaveLength(3);
    const second = await list('?limit=2&page=2').expect(200);
    expect(second.body.data.map((k: { id: string }) => k.id)).toEqual(all.slice(2));
    expect(second.body.meta).toEqual({ total: 3, page: 2, per_page: 2, total_pages: 2 });
    for (const qs of ['?limit=0', '?limit=101', '?page=0', '?sort=asc']) {
      const bad = await list(qs).expect(400);
      expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('when the session token is junk, then 401 says it is invalid, not that it expired', async () => {
    const res = await request(gw.url)
      .get('/v1/account/keys')
      .set('Authorization', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl')
      .expect(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
    expect(res.body.error.message).toBe('Invalid session token; log in again.');
  });

  it('when a holder touches another account’s key, then 404 and the key keeps working', async () => {
    const a = await gw.account(undefined, 'password-a');
    const b = await gw.account(undefined, 'password-b');
    const tokenA = await session(a.email, 'password-a');
    await request(gw.url)
      .delete(`/v1/account/keys/${b.keyId}`)
      .set('Authorization', `Bearer ${tokenA}`)
      .expect(404);
    const renamed = await request(gw.url)
      .patch(`/v1/account/keys/${b.keyId}`)
      .set('Authorization', `Bearer ${tokenA}`)
      .send({ name: 'taken over' })
      .expect(404);
    expect(renamed.body.error).toMatchObject({
      code: 'NOT_FOUND',
      message: `API key ${b.keyId} was not found.`,
    });
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${b.key}`).expect(200);
    const tokenB = await session(b.email, 'password-b');
    const listB = await request(gw.url).get('/v1/account/keys').set('Authorization', `Bearer ${tokenB}`);
    expect(listB.body.data.map((k: { name: string }) => k.name)).not.toContain('taken over');
  });

  it('when a holder renames a key, then the name changes and nothing else: the key works, its secret is not shown, a bad name is a 400', async () => {
    const { email, key, keyId } = await gw.account(undefined, 'renaming keys');
    const auth = { Authorization: `Bearer ${await session(email, 'renaming keys')}` };
    const before = (await request(gw.url).get('/v1/account/keys').set(auth).expect(200)).body.data[0];
    const renamed = await request(gw.url)
      .patch(`/v1/account/keys/${keyId}`)
      .set(auth)
      .send({ name: '  production (EU)  ' })
      .expect(200);
    apiKeySchema.parse(renamed.body.data);
    expect(renamed.body.data).toEqual({ ...before, name: 'production (EU)' });
    expect(JSON.stringify(renamed.body)).not.toContain(key);
    const listed = await request(gw.url).get('/v1/account/keys').set(auth).expect(200);
    expect(listed.body.data[0]).toEqual(renamed.body.data);
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    for (const [body, message] of [
      [{ name: '' }, 'name is required'],
      [
        { name: 'a\u001b[31mb' },
        'name must not contain control characters or text-direction marks (such as U+202E)',
      ],
      [{ name: 'x', expires_at: '2030-01-01T00:00:00Z' }, undefined],
    ] as const) {
      const refused = await request(gw.url)
        .patch(`/v1/account/keys/${keyId}`)
        .set(auth)
        .send(body)
        .expect(400);
      expect(refused.body.error.code).toBe('VALIDATION_ERROR');
      if (message) expect(refused.body.error.details).toEqual([{ field: 'name', message }]);
    }
    // A revoked key can still be renamed (its name is how its history is read); it stays revoked.
    await request(gw.url).delete(`/v1/account/keys/${keyId}`).set(auth).expect(200);
    const old = await request(gw.url)
      .patch(`/v1/account/keys/${keyId}`)
      .set(auth)
      .send({ name: 'old production' })
      .expect(200);
    expect(old.body.data).toMatchObject({ name: 'old production', status: 'revoked' });
    await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(401);
  });

  it('when an API key is used on the account API, then 403 — a key never manages keys', async () => {
    const { key } = await gw.account();
    const res = await request(gw.url)
      .post('/v1/account/keys')
      .set('Authorization', `Bearer ${key}`)
      .send({ name: 'x' })
      .expect(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });

  it('when a script rolls a key by the API, then the new key works at once, the old one through its overlap, a repeat with the Idempotency-Key gets the same new key, and a second roll is a conflict', async () => {
    const { email, key, keyId } = await gw.account(undefined, 'roll by script');
    const auth = { Authorization: `Bearer ${await session(email, 'roll by script')}` };
    const roll = (body: object, idempotencyKey?: string) => {
      const req = request(gw.url).post(`/v1/account/keys/${keyId}/roll`).set(auth);
      return (idempotencyKey ? req.set('Idempotency-Key', idempotencyKey) : req).send(body);
    };
    const bad = await roll({ overlap_seconds: 30 }).expect(400);
    expect(bad.body.error.details).toEqual([
      { field: 'overlap_seconds', message: 'overlap_seconds must be 0 or at least 60' },
    ]);
    const rolled = await roll({ overlap_seconds: 3600 }, 'ci-roll-1').expect(201);
    const { created, previous } = rolled.body.data;
    expect(created.key).toMatch(/^sk_live_/);
    expect(previous).toMatchObject({ id: keyId, replaced_by: created.id, status: 'active' });
    expect(Date.parse(previous.expires_at)).toBeGreaterThan(Date.parse(created.created_at));
    for (const k of [key, created.key as string])
      await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${k}`).expect(200);
    const again = await roll({ overlap_seconds: 3600 }, 'ci-roll-1').expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.created).toMatchObject({ id: created.id, key: created.key });
    const second = await roll({ overlap_seconds: 0 }).expect(409);
    expect(second.body.error.code).toBe('CONFLICT');
    // A key manages no keys, its own roll included.
    await request(gw.url)
      .post(`/v1/account/keys/${keyId}/roll`)
      .set('Authorization', `Bearer ${key}`)
      .send({ overlap_seconds: 0 })
      .expect(403);
  });

  it('when a key in its overlap is rolled again once its replacement was revoked, then the new key keeps the expiry the key was given, not the overlap', async () => {
    const { email } = await gw.account(undefined, 'roll twice');
    const auth = { Authorization: `Bearer ${await session(email, 'roll twice')}` };
    const given = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const first = await request(gw.url)
      .post('/v1/account/keys')
      .set(auth)
      .send({ name: 'given expiry', expires_at: given })
      .expect(201);
    const k1 = first.body.data.id as string;
    const roll = (id: string, overlap: number) =>
      request(gw.url).post(`/v1/account/keys/${id}/roll`).set(auth).send({ overlap_seconds: overlap });
    const k2 = (await roll(k1, 3600).expect(201)).body.data.created;
    expect(Date.parse(k2.expires_at)).toBe(Date.parse(given));
    // The replacement is rolled without overlap (revoked), so k1, still in its hour, rolls again.
    await roll(k2.id as string, 0).expect(201);
    const again = await roll(k1, 3600).expect(201);
    expect(Date.parse(again.body.data.created.expires_at)).toBe(Date.parse(given));
    expect(Date.parse(again.body.data.previous.expires_at)).toBeLessThan(Date.parse(given));
  });

  it('when the password is wrong or the email unknown, then the same 401', async () => {
    const { email } = await gw.account(undefined, 'right-password');
    const wrong = await request(gw.url).post('/v1/auth/login').send({ email, password: 'wrong' }).expect(401);
    const unknown = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email: 'nobody@example.com', password: 'wrong' })
      .expect(401);
    expect(wrong.body.error.message).toBe(unknown.body.error.message);
  });

  it('when the body is invalid, then 400 naming the field; a non-JSON body is 415', async () => {
    const { email } = await gw.account(undefined, 'pw-123456');
    const token = await session(email, 'pw-123456');
    const res = await request(gw.url)
      .post('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: '' })
      .expect(400);
    expect(res.body.error.message).toContain('name');
    const past = await request(gw.url)
      .post('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .send({ name: 'old', expires_at: '2020-01-01T00:00:00Z' })
      .expect(400);
    expect(past.body.error.message).toContain('expires_at');
    await request(gw.url)
      .post('/v1/auth/login')
      .set('Content-Type', 'text/plain')
      .send('email=x')
      .expect(415);
  });
});

describe('per-IP guard for requests without a valid key', () => {
  it('when one IP keeps failing, then it gets 429 after the guard limit; keys it already used keep working', async () => {
    const guarded = await startGateway({
      label: 'gw_ip',
      upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
      env: { IP_RATE_LIMIT_PER_MINUTE: '5' },
    });
    try {
      const { key } = await guarded.account();
      await request(guarded.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++)
        statuses.push(
          (await request(guarded.url).get('/v1/signals').set('Authorization', 'Bearer nope')).status,
        );
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
      await request(guarded.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    } finally {
      await guarded.stop();
    }
  });
});

describe('Redis outage policy', () => {
  let proxy: TcpProxy;
  let fragile: GatewayHarness;
  beforeAll(async () => {
    const redis = new URL(infraUrls().redisUrl);
    proxy = await startTcpProxy(redis.hostname, Number(redis.port || 6379));
    fragile = await startGateway({
      label: 'gw_redis',
      upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
      env: { REDIS_URL: viaProxy(infraUrls().redisUrl, proxy) },
    });
  });
  afterAll(async () => {
    proxy.restore();
    await fragile.stop();
    await proxy.close();
  });

  it('when Redis stops answering with its connections open, then /healthz answers, with the window this gateway knows', async () => {
    const before = await request(fragile.url).get('/healthz').expect(200);
    expect(before.headers['x-ratelimit-limit']).toBeDefined();
    proxy.stall();
    try {
      // No reply from the store: the headers are the gateway's own view, as in an outage.
      const stalled = await request(fragile.url).get('/healthz').expect(200);
      expect(stalled.body.data).toEqual({ status: 'ok' });
      expect(stalled.headers['x-ratelimit-limit']).toBe(before.headers['x-ratelimit-limit']);
      expect(stalled.headers['x-ratelimit-reset']).toBeDefined();
    } finally {
      proxy.resume();
    }
  });

  it('when Redis goes away, then recently seen keys keep working on a local limiter, unknown ones get 503, nothing hangs; and it recovers', async () => {
    const known = await fragile.account({ per_minute: 3, per_day: 100 });
    const fresh = valueOrThrow(await createApiKey(fragile.deps.accounts, known.accountId, 'never used'));
    await request(fragile.url).get('/v1/signals').set('Authorization', `Bearer ${known.key}`).expect(200);

    proxy.cut();
    await waitFor(() => fragile.deps.redis.status !== 'ready', 5000, 20, 'redis to drop');
    const ok = await request(fragile.url).get('/v1/signals').set('Authorization', `Bearer ${known.key}`);
    expect(ok.status).toBe(200);
    expect(ok.headers['x-ratelimit-limit']).toBe('3');
    const unknown = await request(fragile.url)
      .get('/v1/signals')
      .set('Authorization', `Bearer ${fresh.key}`)
      .expect(503);
    expect(unknown.body.error.code).toBe('SERVICE_UNAVAILABLE');
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await request(fragile.url).get('/v1/signals').set('Authorization', `Bearer ${known.key}`)).status,
      );
    expect(statuses).toContain(429);
    // It still serves (recent keys): ready, but it says "degraded" (looked at once a second).
    await waitFor(
      async () => (await request(fragile.url).get('/readyz')).body.data?.status === 'degraded',
      3000,
      100,
      'readiness to say degraded',
    );
    const ready = await request(fragile.url).get('/readyz').expect(200);
    expect(ready.body.data.checks).toMatchObject({ mongo: 'ok' });
    expect(ready.body.data.checks.redis).not.toBe('ok');

    proxy.restore();
    await waitFor(() => fragile.deps.redis.status === 'ready', 10_000, 50, 'redis to return');
    await request(fragile.url).get('/v1/signals').set('Authorization', `Bearer ${fresh.key}`).expect(200);
    // /readyz looks at the stores at most once a second: the verdict follows within that.
    await waitFor(
      async () => (await request(fragile.url).get('/readyz')).body.data?.status === 'ready',
      3000,
      100,
      'ready',
    );
  });
});

describe('the public pages and their static files', () => {
  it('when a page and its scripts, styles and icon load, then each carries the rate-limit headers of the address and spends none of its requests', async () => {
    // Every request below falls in one minute window of the address.
    await startOfAMinuteIfLate(10_000);
    // A request without a key counts against the address (and says what is left).
    const counted = async () => {
      const res = await request(gw.url).get('/v1/signals').expect(401);
      return Number(res.headers['x-ratelimit-remaining']);
    };
    const before = await counted();
    for (const path of [
      '/dashboard',
      '/docs',
      '/openapi.json',
      '/dashboard/assets/styles.css',
      '/dashboard/assets/favicon.svg',
      '/favicon.ico',
      '/docs/init.js',
      '/docs/assets/standalone.js',
    ]) {
      // The window the request fell in ends after it was sent (read before, not after: a window
      // that ended while a loaded machine answered is still the request's own).
      const sent = Date.now();
      const res = await request(gw.url).get(path).expect(200);
      expect({
        path,
        limit: res.headers['x-ratelimit-limit'],
        remaining: res.headers['x-ratelimit-remaining'],
      }).toEqual({
        path,
        limit: '500',
        remaining: String(before),
      });
      expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(sent / 1000);
    }
    expect(await counted()).toBe(before - 1);
  });
});

describe('OpenAPI document', () => {
  it('when /openapi.json and /docs are fetched, then every public route is documented and the page renders it', async () => {
    const doc = (await request(gw.url).get('/openapi.json').expect(200)).body;
    expect(doc.openapi).toBe('3.1.0');
    for (const p of [
      '/v1/signals',
      '/v1/signals/{signal_id}',
      '/v1/stats',
      '/v1/webhooks',
      '/v1/webhooks/{webhook_id}/deliveries',
      '/v1/account/keys',
    ]) {
      expect(doc.paths[p]).toBeDefined();
    }
    const operations = Object.values(
      doc.paths as Record<string, Record<string, { operationId?: string; tags?: string[] }>>,
    ).flatMap((item) => Object.values(item));
    expect(operations.every((op) => typeof op.operationId === 'string' && (op.tags ?? []).length === 1)).toBe(
      true,
    );
    expect(new Set(operations.map((op) => op.operationId)).size).toBe(operations.length);
    // Responses stay open (clients ignore added fields); request bodies stay strict.
    expect(doc.components.schemas.SignalListItem.additionalProperties).toBeUndefined();
    expect(doc.components.schemas.CreateWebhookRequest.additionalProperties).toBe(false);
    const params = doc.paths['/v1/signals'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['type', 'status', 'since', 'limit', 'page', 'cursor']));
    // The subscriptions list pages like the others: page/limit in, meta out.
    const listWebhooks = doc.paths['/v1/webhooks'].get;
    expect(listWebhooks.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['limit', 'page']);
    const listRef = String(listWebhooks.responses['200'].content['application/json'].schema.$ref);
    expect(doc.components.schemas[listRef.split('/').pop() ?? ''].required).toContain('meta');
    expect(doc.components.schemas.PageMeta.required).toEqual(['total', 'page', 'per_page', 'total_pages']);
    expect(doc.paths['/v1/webhooks/{webhook_id}/test'].post.responses['409']).toBeDefined();
    const page = await request(gw.url).get('/docs').expect(200);
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(page.text).toContain('/docs/assets/standalone.js');
    await request(gw.url).get('/docs/init.js').expect(200);
    const bundle = await request(gw.url).get('/docs/assets/standalone.js').expect(200);
    expect(bundle.headers['content-type']).toMatch(/javascript/);
    const guide = await request(gw.url).get('/docs/receiving-webhooks.md').expect(200);
    expect(guide.text).toContain('hmac.compare_digest');
    expect(guide.text).toContain('createHmac');
  });

  it('when real responses come back, then they validate against the document', async () => {
    const doc = (await request(gw.url).get('/openapi.json')).body;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'api', components: doc.components }, 'api');
    const check = (path: string, method: string, status: string, body: unknown) => {
      const schema = doc.paths[path][method].responses[status].content['application/json'].schema;
      // Refs may sit anywhere in a response schema (error responses are allOf the envelope and their codes).
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"api#/components/')),
      );
      const valid = validate(body);
      if (!valid) throw new Error(`${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
    };
    const { key } = await gw.account();
    const auth = { Authorization: `Bearer ${key}` };
    // A signal of this test's own, listed before the list is checked (the index applies a write
    // right after it is stored; a write whose index update failed shows once the signals service's background repair has run).
    const ingested = await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput())
      .expect(201);
    const id: string = ingested.body.data.id;
    const list = await waitFor(
      async () => {
        const res = await request(gw.url).get('/v1/signals?limit=100').set(auth).expect(200);
        return res.body.data.some((s: { id: string }) => s.id === id) && res;
      },
      5000,
      50,
      `signal ${id} in the list`,
    );
    check('/v1/signals', 'get', '200', list.body);
    const one = await request(gw.url).get(`/v1/signals/${id}`).set(auth).expect(200);
    check('/v1/signals/{signal_id}', 'get', '200', one.body);
    const bad = await request(gw.url).get('/v1/signals?limit=0').set(auth).expect(400);
    check('/v1/signals', 'get', '400', bad.body);
    const missing = await request(gw.url).get('/v1/signals/sig_x').set(auth).expect(404);
    check('/v1/signals/{signal_id}', 'get', '404', missing.body);
    const unauthorized = await request(gw.url).get('/v1/signals').expect(401);
    check('/v1/signals', 'get', '401', unauthorized.body);
  });
});
