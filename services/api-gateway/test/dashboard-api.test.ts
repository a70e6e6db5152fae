import type { UsageBucket } from '@signal/contracts';
import { connectRedis } from '@signal/service-kit';
import { infraUrls, silentLogger, startOfAMinuteIfLate, waitFor } from '@signal/test-kit';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { RateLimitStore } from '../src/edge/data/rate-limit.store';
import { startGateway, type GatewayHarness } from './gateway-harness';
import { startSystem, type SystemHarness } from './system-harness';

interface Session {
  cookie: string;
  csrf: string;
  email: string;
}

let counter = 0;
async function signUp(url: string): Promise<Session & { res: request.Response }> {
  counter += 1;
  const email = `dash${counter}-${Date.now()}@example.com`;
  const res = await request(url)
    .post('/v1/dashboard/signup')
    .send({ email, password: 'a long enough password' })
    .expect(201);
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = setCookie[0]!.split(';')[0]!;
  return { cookie, csrf: res.body.data.csrf_token as string, email, res };
}

/** A signed-up session, its headers, and a key of its to roll. */
async function sessionWithKey(url: string) {
  const s = await signUp(url);
  const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
  const first = (await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'prod' }).expect(201))
    .body.data;
  return { s, auth, first };
}

describe('dashboard API (cookie session)', () => {
  let sys: SystemHarness;
  let url: string;

  beforeAll(async () => {
    sys = await startSystem('dashapi');
    url = sys.gw.url;
  });
  afterAll(async () => {
    await sys.stop();
  });

  it('when someone signs up, then the session is an HttpOnly Secure SameSite=Strict __Host- cookie and nothing is cached', async () => {
    const { res } = await signUp(url);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!;
    expect(cookie).toMatch(
      /^__Host-signal_session=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=\d+$/,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.data.account.plan).toEqual({ per_minute: 60, per_day: 10_000 });
    expect(res.body.data.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('when someone signs up with a password of spaces alone, then it is refused at its field and no account is made', async () => {
    const email = `blank-${Date.now()}@example.com`;
    const res = await request(url)
      .post('/v1/dashboard/signup')
      .send({ email, password: ' '.repeat(12) })
      .expect(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'password', message: 'password must not be only spaces' }],
    });
    // No account: the same email signs up with a real passphrase.
    await request(url)
      .post('/v1/dashboard/signup')
      .send({ email, password: '  spaced out passphrase  ' })
      .expect(201);
  });

  it('when a session asks for a path no route owns, then it is 404 as for an API key, never 401', async () => {
    const s = await signUp(url);
    for (const path of ['/v1/nope', '/v1/', '/v1/signals/sig_1/extra']) {
      const res = await request(url).get(path).set('Cookie', s.cookie).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    // The session still works.
    await request(url).get('/v1/signals').set('Cookie', s.cookie).expect(200);
  });

  it('when an unsafe request lacks the CSRF token or comes from another origin, then it is refused with 403 saying which', async () => {
    const s = await signUp(url);
    const noToken = await request(url).post('/v1/dashboard/keys').set('Cookie', s.cookie).send({ name: 'x' });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error).toMatchObject({ code: 'FORBIDDEN', request_id: expect.any(String) });
    expect(noToken.body.error.message).toContain('CSRF token');
    const crossSite = await request(url)
      .post('/v1/dashboard/keys')
      .set({ Cookie: s.cookie, 'X-CSRF-Token': s.csrf, Origin: 'https://evil.example' })
      .send({ name: 'x' })
      .expect(403);
    // The token was right: the message names the Origin, not the token.
    expect(crossSite.body.error.message).toBe(
      'Cross-site request refused: Origin "https://evil.example" is not this site.',
    );
    const other = await signUp(url);
    await request(url)
      .post('/v1/dashboard/keys')
      .set({ Cookie: s.cookie, 'X-CSRF-Token': other.csrf })
      .send({ name: 'x' })
      .expect(403);
    await request(url).get('/v1/dashboard/keys').expect(401);
  });

  it('when a session renames a key, then the list shows the new name and the key keeps working; without the CSRF token it is refused', async () => {
    const s = await signUp(url);
    const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
    const created = await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'ci' }).expect(201);
    const { key, id } = created.body.data as { key: string; id: string };
    const refused = await request(url)
      .patch(`/v1/dashboard/keys/${id}`)
      .set('Cookie', s.cookie)
      .send({ name: 'staging' })
      .expect(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    const renamed = await request(url)
      .patch(`/v1/dashboard/keys/${id}`)
      .set(auth)
      .send({ name: 'staging' })
      .expect(200);
    expect(renamed.body.data).toMatchObject({ id, name: 'staging', status: 'active' });
    expect(JSON.stringify(renamed.body)).not.toContain(key);
    const list = await request(url).get('/v1/dashboard/keys').set(auth).expect(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id, name: 'staging', status: 'active' })]);
    await request(url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
  });

  it('when a session creates a key, then it is shown once, works, and revoking it gives the next call 401', async () => {
    const s = await signUp(url);
    const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
    const created = await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'ci' }).expect(201);
    expect(created.headers['cache-control']).toBe('no-store');
    const { key, id } = created.body.data as { key: string; id: string };
    const list = await request(url).get('/v1/dashboard/keys').set(auth).expect(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id, name: 'ci', status: 'active' })]);
    expect(list.body.meta).toEqual({ total: 1, page: 1, per_page: 100, total_pages: 1 });
    expect(JSON.stringify(list.body)).not.toContain(key);

    await request(url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
    // API keys never manage keys.
    await request(url).get('/v1/dashboard/keys').set('Authorization', `Bearer ${key}`).expect(403);
    await request(url).delete(`/v1/dashboard/keys/${id}`).set(auth).expect(200);
    await request(url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(401);
  });

  it('when a key route is given an id of another form (a NUL, another prefix, overlong), then it is 404 NOT_FOUND, never a 500', async () => {
    const s = await signUp(url);
    const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
    const token = (
      await request(url)
        .post('/v1/auth/login')
        .send({ email: s.email, password: 'a long enough password' })
        .expect(200)
    ).body.data.token as string;
    for (const id of ['%00', 'key_%00', 'abc', `key_${'a'.repeat(60)}`]) {
      const calls = [
        request(url).delete(`/v1/account/keys/${id}`).set('Authorization', `Bearer ${token}`),
        request(url).delete(`/v1/dashboard/keys/${id}`).set(auth),
        request(url).post(`/v1/dashboard/keys/${id}/roll`).set(auth).send({ overlap_seconds: 0 }),
        request(url).patch(`/v1/dashboard/keys/${id}`).set(auth).send({ name: 'x' }),
        request(url)
          .patch(`/v1/account/keys/${id}`)
          .set('Authorization', `Bearer ${token}`)
          .send({ name: 'x' }),
      ];
      for (const res of await Promise.all(calls)) {
        expect([id, res.status, res.body.error?.code]).toEqual([id, 404, 'NOT_FOUND']);
      }
    }
  });

  it('when a roll names its overlap as a numeral string, then it is read as the number', async () => {
    const { auth, first } = await sessionWithKey(url);
    const rolled = await request(url)
      .post(`/v1/dashboard/keys/${first.id}/roll`)
      .set(auth)
      .send({ overlap_seconds: '3600' })
      .expect(201);
    expect(Date.parse(rolled.body.data.previous.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    const refused = await request(url)
      .post(`/v1/dashboard/keys/${rolled.body.data.created.id}/roll`)
      .set(auth)
      .send({ overlap_seconds: '30' })
      .expect(400);
    expect(refused.body.error.message).toContain('overlap_seconds must be 0 or at least 60');
  });

  it('when a key is rolled with an overlap, then both work until the old one expires; with 0 the old one stops at once', async () => {
    const { s, auth, first } = await sessionWithKey(url);
    const rolled = await request(url)
      .post(`/v1/dashboard/keys/${first.id}/roll`)
      .set(auth)
      .send({ overlap_seconds: 3600 })
      .expect(201);
    const { created, previous } = rolled.body.data;
    expect(created).toMatchObject({
      name: 'prod',
      status: 'active',
      key: expect.stringMatching(/^sk_live_/),
      replaced_by: null,
    });
    // The old key says what replaced it, in the roll's answer and in the list from then on.
    expect(previous.replaced_by).toBe(created.id);
    const listed = (await request(url).get('/v1/dashboard/keys').set(auth).expect(200)).body.data as Array<{
      id: string;
      replaced_by: string | null;
    }>;
    expect(listed.find((k) => k.id === first.id)?.replaced_by).toBe(created.id);
    expect(Date.parse(previous.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    // The old key's streams read its end where every gateway checks them (their test: open-streams).
    const accountId = jwt.decode(s.cookie.slice(s.cookie.indexOf('=') + 1), { json: true })?.sub;
    const redis = await connectRedis(infraUrls().redisUrl, silentLogger);
    try {
      const states = await new RateLimitStore(redis, sys.gw.config.REDIS_PREFIX).statesAmong([
        { accountId: String(accountId), keyId: first.id as string },
      ]);
      expect(states).toEqual([{ revoked: false, endsAt: Date.parse(previous.expires_at) }]);
    } finally {
      redis.disconnect();
    }
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${first.key}`).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${created.key}`).expect(200);

    await request(url)
      .post(`/v1/dashboard/keys/${created.id}/roll`)
      .set(auth)
      .send({ overlap_seconds: 30 })
      .expect(400);
    const now = (
      await request(url)
        .post(`/v1/dashboard/keys/${created.id}/roll`)
        .set(auth)
        .send({ overlap_seconds: 0 })
        .expect(201)
    ).body.data;
    expect(now.previous.status).toBe('revoked');
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${created.key}`).expect(401);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${now.created.key}`).expect(200);
  });

  it('when a roll is sent again with its Idempotency-Key, then one replacement is made and the repeat answers with it, secret included; another body with the key is 409', async () => {
    const { auth, first } = await sessionWithKey(url);
    const roll = (overlap: number) =>
      request(url)
        .post(`/v1/dashboard/keys/${first.id}/roll`)
        .set(auth)
        .set('Idempotency-Key', 'roll-prod-1')
        .send({ overlap_seconds: overlap });
    const rolled = await roll(3600).expect(201);
    expect(rolled.headers['idempotent-replayed']).toBeUndefined();
    const again = await roll(3600).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.created).toEqual(rolled.body.data.created);
    expect(again.body.data.previous).toMatchObject({
      id: first.id,
      expires_at: rolled.body.data.previous.expires_at,
    });
    await request(url)
      .get('/v1/stats')
      .set('Authorization', `Bearer ${again.body.data.created.key}`)
      .expect(200);
    const other = await roll(0).expect(409);
    expect(other.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    // The same key and body for another key's roll: the message names the resource as well as the body.
    const second = (await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'ci' }).expect(201))
      .body.data;
    const elsewhere = await request(url)
      .post(`/v1/dashboard/keys/${second.id}/roll`)
      .set(auth)
      .set('Idempotency-Key', 'roll-prod-1')
      .send({ overlap_seconds: 3600 })
      .expect(409);
    expect(elsewhere.body.error).toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      message: expect.stringContaining('another resource'),
    });

    const keys = await request(url).get('/v1/dashboard/keys').set(auth).expect(200);
    expect(keys.body.data.filter((k: { name: string }) => k.name === 'prod')).toHaveLength(2);
    // Without the key, a second roll of the same key is refused as before.
    await request(url)
      .post(`/v1/dashboard/keys/${first.id}/roll`)
      .set(auth)
      .send({ overlap_seconds: 3600 })
      .expect(409);
  });

  it('when a key is used, refused and limited, then usage per key and per account counts served, 401 and 429', async () => {
    const s = await signUp(url);
    const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
    const a = (await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'a' }).expect(201)).body
      .data;
    const b = (await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'b' }).expect(201)).body
      .data;
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${a.key}`).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${a.key}`).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${b.key}`).expect(200);
    await request(url).delete(`/v1/dashboard/keys/${b.id}`).set(auth).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${b.key}`).expect(401);
    // Summed over the whole series (the account is new): a minute or day boundary can fall between the requests.
    type Bucket = Omit<UsageBucket, 'at'>;
    const summed = (buckets: Bucket[]): Bucket =>
      buckets.reduce(
        (t, b) => ({
          served: t.served + b.served,
          unauthorized: t.unauthorized + b.unauthorized,
          rate_limited: t.rate_limited + b.rate_limited,
          server_error: t.server_error + b.server_error,
        }),
        { served: 0, unauthorized: 0, rate_limited: 0, server_error: 0 },
      );
    const minutes = (u: request.Response) => summed(u.body.data.minutes);
    await waitFor(
      async () => minutes(await request(url).get('/v1/dashboard/usage').set(auth)).unauthorized === 1,
      5000,
      50,
      'usage recorded',
    );
    const account = await request(url).get('/v1/dashboard/usage').set(auth).expect(200);
    expect(account.body.data.plan).toEqual({ per_minute: 60, per_day: 10_000 });
    expect(account.body.data.minutes).toHaveLength(60);
    expect(account.body.data.days).toHaveLength(30);
    expect(minutes(account)).toEqual({ served: 3, unauthorized: 1, rate_limited: 0, server_error: 0 });
    expect(summed(account.body.data.days)).toMatchObject({ served: 3, unauthorized: 1 });
    const keyA = await request(url).get(`/v1/dashboard/usage?key_id=${a.id}`).set(auth).expect(200);
    expect(minutes(keyA)).toMatchObject({ served: 2, unauthorized: 0 });
    await request(url).get('/v1/dashboard/usage?key_id=key_unknown').set(auth).expect(404);

    // 429: a plan of 1/minute.
    const limited = await sys.gw.account({ per_minute: 1, per_day: 100 });
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${limited.key}`).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${limited.key}`).expect(429);
    const usage = sys.gw.deps.redis;
    await waitFor(
      async () => {
        const keys = await usage.keys(`${sys.gw.config.REDIS_PREFIX}usage:{${limited.accountId}}:m:*`);
        return keys.length === 1 && (await usage.hget(keys[0]!, `${limited.keyId}:rate_limited`)) === '1';
      },
      5000,
      50,
      '429 counted',
    );
  });

  it("when an account used part of its plan, then usage says what is left in the minute and the day, and the dashboard's own requests are a source of their own", async () => {
    const acct = await sys.gw.account({ per_minute: 50, per_day: 1000 }, 'usage left passphrase');
    const login = await request(url)
      .post('/v1/dashboard/session')
      .send({ email: acct.email, password: 'usage left passphrase' })
      .expect(200);
    const cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const auth = { Cookie: cookie };
    await startOfAMinuteIfLate(10_000);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${acct.key}`).expect(200);
    await request(url).get('/v1/stats').set('Authorization', `Bearer ${acct.key}`).expect(200);
    await request(url).get('/v1/stats').set(auth).expect(200);
    await request(url).get('/v1/stats').set('Authorization', 'Bearer sk_live_unknown').expect(401);
    const usage = await waitFor(
      async () => {
        const u = await request(url).get('/v1/dashboard/usage').set(auth).expect(200);
        return u.body.data.remaining.minute.used === 3 ? u.body.data : undefined;
      },
      5000,
      50,
      'three requests in the usage',
    );
    expect(usage.remaining.minute).toEqual({
      limit: 50,
      used: 3,
      remaining: 47,
      resets_at: expect.stringMatching(/:00\.000Z$/),
    });
    expect(usage.remaining.day).toMatchObject({ limit: 1000, used: 3, remaining: 997 });
    expect(usage.remaining.day.resets_at).toMatch(/T00:00:00\.000Z$/);
    const served = (u: { minutes: UsageBucket[] }) => u.minutes.reduce((t, b) => t + b.served, 0);
    const dashboard = await request(url).get('/v1/dashboard/usage?key_id=dashboard').set(auth).expect(200);
    expect(dashboard.body.data.subject).toBe('dashboard');
    expect(served(dashboard.body.data)).toBe(1);
    // The account's remaining, whichever source is shown.
    expect(dashboard.body.data.remaining.minute.remaining).toBe(47);
    const key = await request(url).get(`/v1/dashboard/usage?key_id=${acct.keyId}`).set(auth).expect(200);
    expect(served(key.body.data)).toBe(2);
    expect(served(key.body.data) + served(dashboard.body.data)).toBe(served(usage));
    const bad = await request(url).get('/v1/dashboard/usage?key_id=everything').set(auth).expect(400);
    expect(bad.body.error.message).toContain('key_id must be a key id or dashboard');
  });

  it('when a browser asks for /favicon.ico, then it gets the icon, not a 404', async () => {
    const res = await request(url).get('/favicon.ico').expect(200);
    expect(res.headers['content-type']).toMatch(/^image\/svg\+xml/);
  });

  it('when a session manages webhooks, then it reaches the webhooks service as its account, with CSRF checked', async () => {
    const s = await signUp(url);
    const auth = { Cookie: s.cookie, 'X-CSRF-Token': s.csrf };
    const body = { url: `${sys.receiver.url}/dash`, events: ['signal.new'] };
    await request(url).post('/v1/webhooks').set('Cookie', s.cookie).send(body).expect(403);
    const created = await request(url).post('/v1/webhooks').set(auth).send(body).expect(201);
    expect(created.headers['cache-control']).toBe('no-store');
    const id = created.body.data.id as string;
    await request(url).post(`/v1/webhooks/${id}/test`).set(auth).expect(202);
    await waitFor(() => sys.receiver.requests.some((r) => r.path === '/dash'), 10_000, 50, 'test delivery');
    const listed = await request(url).get('/v1/webhooks').set(auth).expect(200);
    expect(listed.body.data.map((w: { id: string }) => w.id)).toEqual([id]);
    // The same account's API key sees it; another account does not.
    const key = (await request(url).post('/v1/dashboard/keys').set(auth).send({ name: 'k' }).expect(201)).body
      .data.key;
    await request(url).get(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`).expect(200);
    const other = await signUp(url);
    await request(url).get(`/v1/webhooks/${id}`).set('Cookie', other.cookie).expect(404);
    await request(url).get('/v1/signals?limit=1').set('Cookie', s.cookie).expect(200);
    await request(url).get('/v1/stats?period=7d').set('Cookie', s.cookie).expect(200);
  });

  it('when a session calls the public routes, then they count against the account plan with its keys and show in its usage', async () => {
    const acct = await sys.gw.account({ per_minute: 3, per_day: 100 }, 'session plan passphrase');
    const login = await request(url)
      .post('/v1/dashboard/session')
      .send({ email: acct.email, password: 'session plan passphrase' })
      .expect(200);
    const cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const viaSession = () => request(url).get('/v1/stats').set('Cookie', cookie);
    const viaKey = () => request(url).get('/v1/stats').set('Authorization', `Bearer ${acct.key}`);
    await startOfAMinuteIfLate(10_000);
    const remaining = (r: request.Response) => [
      r.headers['x-ratelimit-limit'],
      r.headers['x-ratelimit-remaining'],
    ];
    expect(remaining(await viaSession().expect(200))).toEqual(['3', '2']);
    expect(remaining(await viaKey().expect(200))).toEqual(['3', '1']);
    expect(remaining(await viaSession().expect(200))).toEqual(['3', '0']);
    const over = await viaSession().expect(429);
    expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(over.body.error.retry_after).toBeGreaterThan(0);
    await viaKey().expect(429);
    // The account's usage holds the session's requests beside its key's.
    const auth = { Cookie: cookie };
    await waitFor(
      async () => {
        const u = await request(url).get('/v1/dashboard/usage').set(auth).expect(200);
        const sum = (u.body.data.minutes as UsageBucket[]).reduce(
          (t, b) => ({ served: t.served + b.served, rate_limited: t.rate_limited + b.rate_limited }),
          { served: 0, rate_limited: 0 },
        );
        return sum.served === 3 && sum.rate_limited === 2;
      },
      5000,
      50,
      'session requests in the usage',
    );
  });

  it('when a session is past half its life, then the next request renews it with a new cookie and CSRF token', async () => {
    const s = await signUp(url);
    const session = await request(url).get('/v1/dashboard/session').set('Cookie', s.cookie).expect(200);
    expect(session.headers['set-cookie']).toBeUndefined();
    const accountId = session.body.data.account.id as string;
    const old = jwt.sign({}, sys.gw.config.SESSION_JWT_SECRET, {
      algorithm: 'HS256',
      audience: 'dashboard-cookie',
      subject: accountId,
      jwtid: 'old-session',
      expiresIn: 60,
    });
    const res = await request(url)
      .get('/v1/dashboard/keys')
      .set('Cookie', `__Host-signal_session=${old}`)
      .expect(200);
    const fresh = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    expect(fresh).not.toBe(`__Host-signal_session=${old}`);
    const csrf = res.headers['x-csrf-token'] as string;
    await request(url)
      .post('/v1/dashboard/keys')
      .set({ Cookie: fresh, 'X-CSRF-Token': csrf })
      .send({ name: 'after renewal' })
      .expect(201);
  });

  it('when a response may carry a secret on the API-key or session-token paths, then it says Cache-Control: no-store', async () => {
    const acc = await sys.gw.account(undefined, 'no-store password');
    const login = await request(url)
      .post('/v1/auth/login')
      .send({ email: acc.email, password: 'no-store password' })
      .expect(200);
    expect(login.headers['cache-control']).toBe('no-store');
    const session = { Authorization: `Bearer ${login.body.data.token as string}` };
    const key = await request(url).post('/v1/account/keys').set(session).send({ name: 'n' }).expect(201);
    expect(key.headers['cache-control']).toBe('no-store');
    const auth = { Authorization: `Bearer ${acc.key}` };
    const hook = await request(url)
      .post('/v1/webhooks')
      .set(auth)
      .send({ url: `${sys.receiver.url}/ns`, events: ['signal.new'] })
      .expect(201);
    expect(hook.headers['cache-control']).toBe('no-store');
    const rotated = await request(url)
      .post(`/v1/webhooks/${hook.body.data.id as string}/rotate-secret`)
      .set(auth)
      .expect(200);
    expect(rotated.headers['cache-control']).toBe('no-store');
  });

  it('when a session logs out, then its cookie no longer works', async () => {
    const s = await signUp(url);
    await request(url).get('/v1/dashboard/session').set('Cookie', s.cookie).expect(200);
    const out = await request(url)
      .delete('/v1/dashboard/session')
      .set({ Cookie: s.cookie, 'X-CSRF-Token': s.csrf })
      .expect(200);
    expect(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0]).toContain('Max-Age=0');
    await request(url).get('/v1/dashboard/session').set('Cookie', s.cookie).expect(401);
    const login = await request(url)
      .post('/v1/dashboard/session')
      .send({ email: s.email, password: 'a long enough password' })
      .expect(200);
    expect(login.body.data.csrf_token).not.toBe(s.csrf);
    await request(url)
      .post('/v1/dashboard/session')
      .send({ email: s.email, password: 'wrong password!' })
      .expect(401);
  });
});

describe('dashboard sign-up switch', () => {
  let gw: GatewayHarness;
  beforeAll(async () => {
    const nowhere = 'http://127.0.0.1:9';
    gw = await startGateway({
      label: 'dashoff',
      upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
      env: { SIGNUP_ENABLED: 'false' },
    });
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('when SIGNUP_ENABLED is false, then sign-up responds 403 and the dashboard says so', async () => {
    const res = await request(gw.url)
      .post('/v1/dashboard/signup')
      .send({ email: 'closed@example.com', password: 'a long enough password' })
      .expect(403);
    expect(res.body).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
    const config = await request(gw.url).get('/v1/dashboard/config').expect(200);
    expect(config.body.data).toEqual({ signup_enabled: false });
  });
});
