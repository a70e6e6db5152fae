import { startOfAMinuteIfLate, startReceiver, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { EVERYTHING_BUT_DATE, startGateway, type GatewayHarness } from './gateway-harness';

/**
 * Abuse controls that never lock out a valid credential and never let a burst through: the
 * per-address guard refuses only anonymous requests and failed credentials, login guesses are
 * counted before they are checked, a renewed session ends the one it replaced, sign-up has a
 * per-address limit.
 */
const GUARD_PER_MINUTE = 10;

let upstream: Receiver;
/** The gateway of the running test: each test has its own (its own Redis counters). */
let gw: GatewayHarness;

const upstreams = () => ({ signals: upstream.url, stats: upstream.url, webhooks: upstream.url });

beforeAll(async () => {
  upstream = await startReceiver(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"success":true,"data":[]}',
  }));
});
afterAll(() => upstream.close());

let n = 0;
beforeEach(async () => {
  n += 1;
  gw = await startGateway({
    label: `gw_abuse_${n}`,
    upstreams: upstreams(),
    env: {
      IP_RATE_LIMIT_PER_MINUTE: String(GUARD_PER_MINUTE),
      SESSION_TTL_SECONDS: '60',
      // Longer than two requests take on a loaded machine; the test moves the clock past it.
      SESSION_RENEWAL_GRACE_MS: '10000',
      SIGNUPS_PER_ADDRESS_PER_MINUTE: '3',
    },
  });
});
afterEach(() => gw.stop());

/** Fills this address's guard window with failed keys, until it responds 429. */
async function exhaustAddress(url: string): Promise<void> {
  for (let i = 0; i <= GUARD_PER_MINUTE; i++)
    await request(url).get('/v1/signals').set('Authorization', 'Bearer sk_live_nope');
  await request(url).get('/v1/signals').set('Authorization', 'Bearer sk_live_nope').expect(429);
}

async function signUp(url: string, email = `abuse-${Date.now()}-${Math.random()}@example.com`) {
  const res = await request(url)
    .post('/v1/dashboard/signup')
    .send({ email, password: 'a-long-enough-password' });
  const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]?.split(';')[0] ?? '';
  return { res, cookie, csrf: String(res.body?.data?.csrf_token ?? ''), email };
}

describe('the per-address guard', () => {
  // Each test's counts must fall in one UTC minute (the guard's window).
  beforeEach(() => startOfAMinuteIfLate());

  it('when an address is past its limit with bad keys, then a valid key never used on this gateway is judged by its plan alone, on every gateway', async () => {
    const other = await startGateway({
      label: 'gw_abuse_b',
      upstreams: upstreams(),
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
      env: { IP_RATE_LIMIT_PER_MINUTE: String(GUARD_PER_MINUTE) },
    });
    try {
      await exhaustAddress(gw.url);
      const { key, accountId } = await gw.account({ per_minute: 100_000, per_day: 1_000_000 });
      for (const url of [gw.url, other.url, gw.url, other.url]) {
        const res = await request(url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(200);
        expect(res.headers['x-ratelimit-limit']).toBe('100000');
      }
      // The bad keys are still refused from that address.
      await request(other.url).get('/v1/signals').set('Authorization', 'Bearer sk_live_nope').expect(429);
      await gw.deps.usage.flush();
      const series = await gw.deps.usage.series(accountId);
      expect(JSON.stringify(series)).not.toContain('"rate_limited":1');
    } finally {
      await other.stop();
    }
  });

  it('when an address is past its limit with bad keys, then the dashboard and docs pages still load there, with the headers; loading pages spends none of its budget', async () => {
    const pages = ['/dashboard', '/docs', '/docs/receiving-webhooks', '/openapi.json'];
    // Pages loaded many times over the limit: none is refused, and none is counted.
    for (let i = 0; i < GUARD_PER_MINUTE + 2; i++)
      for (const page of pages) {
        const res = await request(gw.url).get(page).set('Accept', 'text/html').expect(200);
        expect(res.headers['x-ratelimit-limit']).toBe(String(GUARD_PER_MINUTE));
      }
    const before = await request(gw.url)
      .get('/v1/signals')
      .set('Authorization', 'Bearer sk_live_nope')
      .expect(401);
    expect(before.headers['x-ratelimit-remaining']).toBe(String(GUARD_PER_MINUTE - 1));
    // Behind one NAT, a client sending junk keys does not take the login page from the others.
    await exhaustAddress(gw.url);
    for (const page of pages) {
      const res = await request(gw.url).get(page).set('Accept', 'text/html').expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe('0');
    }
  });

  it('when an address is past its limit, then a valid key asking for a path outside the API gets its 404 with its account window, counted there; no key or a bad one there is counted against the address', async () => {
    const { key, accountId } = await gw.account({ per_minute: 1_000, per_day: 1_000_000 });
    const outside = ['/v2/signals', '/', '/robots.txt'];
    // Before the limit: a valid key's request outside the API uses its account's window, not the address's.
    const first = await request(gw.url).get('/v2/signals').set('Authorization', `Bearer ${key}`).expect(404);
    expect(first.headers['x-ratelimit-limit']).toBe('1000');
    const anonymous = await request(gw.url).get('/v2/signals').expect(404);
    expect(anonymous.headers['x-ratelimit-remaining']).toBe(String(GUARD_PER_MINUTE - 1));
    await exhaustAddress(gw.url);
    const remaining: number[] = [];
    for (const path of outside) {
      const res = await request(gw.url).get(path).set('Authorization', `Bearer ${key}`).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(res.headers['x-ratelimit-limit']).toBe('1000');
      remaining.push(Number(res.headers['x-ratelimit-remaining']));
    }
    // Each counted once against the account, after the first.
    expect(remaining).toEqual([998, 997, 996]);
    // The address stays refused without a key, and with a bad one.
    await request(gw.url).get('/v2/signals').expect(429);
    await request(gw.url).get('/v2/signals').set('Authorization', 'Bearer sk_live_nope').expect(429);
    // Usage counts the key's requests outside the API as served.
    await gw.deps.usage.flush();
    expect(JSON.stringify(await gw.deps.usage.series(accountId))).toContain('"served":4');
  });

  it('when an address is past its limit, then a valid dashboard session asking for a path outside the routes gets its 404 with its session window; a junk cookie there is counted against the address', async () => {
    const { cookie } = await signUp(gw.url);
    await exhaustAddress(gw.url);
    for (const path of ['/v2/signals', '/robots.txt']) {
      const res = await request(gw.url).get(path).set('Cookie', cookie).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      // The session's own window (600 a minute), not the address's.
      expect(res.headers['x-ratelimit-limit']).toBe('600');
    }
    await request(gw.url).get('/v2/signals').set('Cookie', '__Host-signal_session=junk').expect(429);
    await request(gw.url).get('/v2/signals').expect(429);
  });

  it('when the probes are asked many times over the limit, then each answers with the headers, none is counted, and none is refused past the limit', async () => {
    for (let i = 0; i < GUARD_PER_MINUTE + 2; i++)
      for (const probe of ['/healthz', '/readyz']) {
        const res = await request(gw.url).get(probe);
        expect(res.status).toBeLessThan(500);
        expect(res.headers['x-ratelimit-limit']).toBe(String(GUARD_PER_MINUTE));
        expect(res.headers['x-ratelimit-remaining']).toBe(String(GUARD_PER_MINUTE));
      }
    await exhaustAddress(gw.url);
    const past = await request(gw.url).get('/healthz').expect(200);
    expect(past.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('when a request carries a junk session cookie, then it is a 401 with the rate-limit headers, and a 429 past the address limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < GUARD_PER_MINUTE + 3; i++) {
      const res = await request(gw.url).get('/v1/signals').set('Cookie', '__Host-signal_session=junk');
      expect(res.headers['x-ratelimit-limit']).toBe(String(GUARD_PER_MINUTE));
      expect(res.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
      statuses.push(res.status);
    }
    expect(statuses.slice(0, GUARD_PER_MINUTE).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(GUARD_PER_MINUTE)).toEqual([429, 429, 429]);
  });

  it('when a valid session keeps failing its CSRF check, then each failure counts against the address; the same session with its token still works', async () => {
    const { cookie, csrf } = await signUp(gw.url);
    const statuses: number[] = [];
    for (let i = 0; i < GUARD_PER_MINUTE + 2; i++) {
      const res = await request(gw.url)
        .post('/v1/webhooks')
        .set({ Cookie: cookie, 'X-CSRF-Token': 'wrong' })
        .send({ url: 'https://example.com/hook' });
      expect(res.headers['x-ratelimit-limit']).toBeDefined();
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 403).length).toBeGreaterThan(0);
    expect(statuses.slice(-2)).toEqual([429, 429]);
    // A valid credential is never refused for its address.
    await request(gw.url).get('/v1/dashboard/session').set('Cookie', cookie).expect(200);
    await request(gw.url)
      .post('/v1/webhooks')
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
      .send({ url: 'https://example.com/hook' })
      .expect(200);
  });
});

describe('login guesses', () => {
  beforeEach(() => startOfAMinuteIfLate());

  it('when 30 wrong passwords for one account arrive at once, then only as many are checked as the policy lets through one at a time', async () => {
    // An address guard that the burst does not reach: this test is about the login throttle.
    const roomy = await startGateway({
      label: `gw_abuse_${n}_roomy`,
      upstreams: upstreams(),
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: `${gw.config.REDIS_PREFIX}roomy:` },
    });
    try {
      await loginBurst(roomy);
    } finally {
      await roomy.stop();
    }
  });

  async function loginBurst(gw: GatewayHarness) {
    const { email } = await gw.account({ per_minute: 60, per_day: 10_000 }, 'the-right-password-1');
    // The gateway's clock stands still from the burst to the last request (only Date is faked: the
    // gateway runs in this process): the throttle's waits are about order, and on a loaded
    // machine the requests can take longer than the first wait.
    jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE });
    try {
      const burst = await Promise.all(
        Array.from({ length: 30 }, () =>
          request(gw.url).post('/v1/auth/login').send({ email, password: 'a-wrong-password-1' }),
        ),
      );
      const statuses = burst.map((r) => r.status);
      // Five failures are free and the sixth attempt is let through; after it everything waits.
      expect(statuses.filter((s) => s === 401)).toHaveLength(6);
      expect(statuses.filter((s) => s === 429)).toHaveLength(24);
      for (const r of burst) expect(r.headers['x-ratelimit-limit']).toBeDefined();
      // The right password now waits too: the guesses before it were counted.
      await request(gw.url)
        .post('/v1/auth/login')
        .send({ email, password: 'the-right-password-1' })
        .expect(429);
    } finally {
      jest.useRealTimers();
    }
  }

  it('when the right password comes from an address past its limit, then the login succeeds', async () => {
    const { email } = await gw.account({ per_minute: 60, per_day: 10_000 }, 'the-right-password-2');
    await exhaustAddress(gw.url);
    const ok = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email, password: 'the-right-password-2' })
      .expect(200);
    expect(ok.body.data.token).toEqual(expect.any(String));
    // A wrong one from there is refused for the address.
    await request(gw.url).post('/v1/auth/login').send({ email, password: 'wrong-password-22' }).expect(429);
  });
});

describe('sliding session renewal', () => {
  it('when a session is renewed, then the cookie it replaced stops working after the grace and the new one works until logout', async () => {
    const { accountId } = await gw.account();
    // A dashboard session past half its life (issued 40 s ago, 60 s TTL) is renewed on use.
    const sessions = gw.deps.logins.sessions;
    const { token } = sessions.issue('cookie', accountId, Date.now() - 40_000);
    const old = `__Host-signal_session=${token}`;
    const renewed = await request(gw.url).get('/v1/dashboard/session').set('Cookie', old).expect(200);
    const fresh = ([] as string[]).concat(renewed.headers['set-cookie'] ?? [])[0]?.split(';')[0] ?? '';
    expect(fresh).toMatch(/^__Host-signal_session=/);
    expect(fresh).not.toBe(old);
    // A request sent with the old cookie while the renewal was on its way still succeeds, and
    // does not renew it a second time.
    const inFlight = await request(gw.url).get('/v1/dashboard/session').set('Cookie', old).expect(200);
    expect(inFlight.headers['set-cookie']).toBeUndefined();
    // Past the grace (the old session still inside its 60 s life): the in-process gateway's Date
    // moves on instead of the test sleeping.
    jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE, advanceTimers: true, now: Date.now() + 11_000 });
    let current: request.Response;
    try {
      const ended = await request(gw.url).get('/v1/dashboard/session').set('Cookie', old).expect(401);
      expect(ended.body.error.message).toContain('ended');
      await request(gw.url).get('/v1/webhooks').set('Cookie', old).expect(401);
      current = await request(gw.url).get('/v1/dashboard/session').set('Cookie', fresh).expect(200);
    } finally {
      jest.useRealTimers();
    }
    await request(gw.url)
      .delete('/v1/dashboard/session')
      .set({ Cookie: fresh, 'X-CSRF-Token': String(current.body.data.csrf_token) })
      .expect(200);
    await request(gw.url).get('/v1/dashboard/session').set('Cookie', fresh).expect(401);
  });
});

describe('sign-up', () => {
  beforeEach(() => startOfAMinuteIfLate());

  it('when an address makes more sign-up attempts than its limit, then the next is a 429, whether the email is new or taken', async () => {
    const first = await signUp(gw.url);
    expect(first.res.status).toBe(201);
    // Taken emails count too: the limit bounds how fast an address can probe for accounts.
    expect((await signUp(gw.url, first.email)).res.status).toBe(409);
    expect((await signUp(gw.url)).res.status).toBe(201);
    const limited = await signUp(gw.url);
    expect(limited.res.status).toBe(429);
    expect(limited.res.headers['x-ratelimit-limit']).toBe('3');
    expect(limited.res.headers['retry-after']).toMatch(/^\d+$/);
  });
});

describe('plan caps', () => {
  it('when an account holds as many active keys as its plan allows, then creating one more is a 409 naming the cap; revoking one makes room', async () => {
    const { email, keyId } = await gw.account(
      { per_minute: 60, per_day: 10_000, max_keys: 2 },
      'the-right-password-3',
    );
    const login = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email, password: 'the-right-password-3' })
      .expect(200);
    const auth = { Authorization: `Bearer ${String(login.body.data.token)}` };
    await request(gw.url).post('/v1/account/keys').set(auth).send({ name: 'second' }).expect(201);
    const refused = await request(gw.url)
      .post('/v1/account/keys')
      .set(auth)
      .send({ name: 'third' })
      .expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toContain('the most its plan allows (2)');
    await request(gw.url).delete(`/v1/account/keys/${keyId}`).set(auth).expect(200);
    await request(gw.url).post('/v1/account/keys').set(auth).send({ name: 'third' }).expect(201);
  });

  it('when many keys are created at once near the cap, then exactly as many succeed as the cap leaves room for', async () => {
    const { email, accountId } = await gw.account(
      { per_minute: 600, per_day: 10_000, max_keys: 5 },
      'the-right-password-4',
    );
    const login = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email, password: 'the-right-password-4' })
      .expect(200);
    const auth = { Authorization: `Bearer ${String(login.body.data.token)}` };
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        request(gw.url)
          .post('/v1/account/keys')
          .set(auth)
          .send({ name: `burst ${i}` }),
      ),
    );
    // One key exists already: four more fit.
    expect(burst.filter((r) => r.status === 201)).toHaveLength(4);
    expect(burst.filter((r) => r.status === 409)).toHaveLength(8);
    const keys = await gw.deps.accounts.repository.listKeys(accountId);
    expect(keys.filter((k) => k.revoked_at === null)).toHaveLength(5);
  });
});
