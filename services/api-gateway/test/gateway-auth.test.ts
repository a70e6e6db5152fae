import { connect } from 'node:net';
import { errorEnvelopeSchema } from '@signal/contracts';
import { startObservability, valueOrThrow } from '@signal/service-kit';
import { exactnessViolations, silentLogger, startReceiver, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { signalInput, startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { createApiKey, revokeApiKey } from '../src/accounts/domain/accounts.use-cases';
import { generateApiKey } from '../src/accounts/domain/api-key';
import { EVERYTHING_BUT_DATE, startGateway, type GatewayHarness } from './gateway-harness';

/** A response of a burst as the limit's exactness check reads it. */
const limitedResponse = (r: { status: number; headers: Record<string, string | undefined> }) => ({
  status: r.status,
  reset: r.headers['x-ratelimit-reset'],
  remaining: r.headers['x-ratelimit-remaining'],
});

let signals: SignalsHarness;
let upstreamEcho: Receiver;
let gw: GatewayHarness;

beforeAll(async () => {
  signals = await startSignals('gw_auth');
  await request(signals.url)
    .post('/internal/signals')
    .set(signals.ingestAuth)
    .send(signalInput())
    .expect(201);
  upstreamEcho = await startReceiver(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"success":true}',
  }));
  gw = await startGateway({
    label: 'gw_auth',
    upstreams: { signals: signals.url, stats: upstreamEcho.url, webhooks: 'http://127.0.0.1:9' },
  });
  // The signal is listed once the read path has it (a loaded machine takes a while): the tests
  // that count it start after that.
  const { key } = await gw.account();
  await waitFor(
    async () => (await api(key)).body.meta?.total === 1,
    60_000,
    50,
    'the ingested signal to be listed',
  );
});
afterAll(async () => {
  await gw.stop();
  await signals.stop();
  await upstreamEcho.close();
});

/** A second gateway instance over the same store, Redis and upstreams as `gw`. */
const anotherGateway = (label: string, env: Record<string, string> = {}) =>
  startGateway({
    label,
    upstreams: { signals: signals.url, stats: upstreamEcho.url, webhooks: 'http://127.0.0.1:9' },
    share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
    env,
  });

const api = (key?: string) => {
  const r = request(gw.url).get('/v1/signals');
  return key ? r.set('Authorization', `Bearer ${key}`) : r;
};

function expectRateHeaders(res: request.Response) {
  expect(Number(res.headers['x-ratelimit-limit'])).toBeGreaterThan(0);
  expect(Number(res.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
  // The window that decided ends no earlier than the second the server answered in (its Date).
  expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(
    Date.parse(res.headers.date!) / 1000,
  );
}

describe('authentication', () => {
  it('when a valid key is sent, then the signals list comes back through the gateway with rate and security headers', async () => {
    const { key } = await gw.account();
    const res = await api(key).expect(200);
    expect(res.body.success).toBe(true);
    expect(res.body.meta.total).toBe(1);
    expectRateHeaders(res);
    expect(res.headers['x-ratelimit-limit']).toBe('60');
    expect(res.headers['x-ratelimit-remaining']).toBe('59');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it.each([
    ['no header', undefined],
    ['a malformed key', 'sk_live_nope'],
    ['an unknown well-formed key', generateApiKey()],
    ['a non-bearer scheme', 'Basic Zm9vOmJhcg=='],
  ])(
    'when the request has %s, then 401 UNAUTHORIZED "invalid or missing API key" with rate headers',
    async (_label, value) => {
      const r = request(gw.url).get('/v1/signals');
      const res = await (
        value ? r.set('Authorization', value.startsWith('Basic') ? value : `Bearer ${value}`) : r
      ).expect(401);
      const body = errorEnvelopeSchema.parse(res.body);
      expect(body.error.code).toBe('UNAUTHORIZED');
      expect(body.error.message).toBe('Invalid or missing API key.');
      expect(body.error.request_id).toBe(res.headers['x-request-id']);
      expectRateHeaders(res);
    },
  );

  it('when a key is sent without the Bearer scheme, then the 401 says to send Authorization: Bearer <API key>', async () => {
    const { key } = await gw.account();
    const res = await request(gw.url).get('/v1/signals').set('Authorization', key).expect(401);
    const body = errorEnvelopeSchema.parse(res.body);
    expect(body.error.code).toBe('UNAUTHORIZED');
    expect(body.error.message).toBe(
      'The Authorization header needs the Bearer scheme: send `Authorization: Bearer <API key>`.',
    );
    expectRateHeaders(res);
  });

  it('when a session token from a login is sent to an API route, then the 401 says API routes take an API key', async () => {
    const { email } = await gw.account({ per_minute: 60, per_day: 10_000 }, 'a-session-password-1');
    const login = await request(gw.url)
      .post('/v1/auth/login')
      .send({ email, password: 'a-session-password-1' })
      .expect(200);
    const token = String(login.body.data.token);
    const res = await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${token}`).expect(401);
    const body = errorEnvelopeSchema.parse(res.body);
    expect(body.error.code).toBe('UNAUTHORIZED');
    expect(body.error.message).toContain('session token');
    expect(body.error.message).toContain('API key');
    expectRateHeaders(res);
    // The token itself still works where sessions do.
    await request(gw.url).get('/v1/account/keys').set('Authorization', `Bearer ${token}`).expect(200);
  });

  it.each([
    ['an empty session cookie', '__Host-signal_session='],
    ['a blank session cookie', '__Host-signal_session=  ; theme=dark'],
    ['a session cookie with no value', '__Host-signal_session'],
    ['an unrelated cookie', 'theme=dark'],
    ['a device cookie only', '__Host-signal_device=abc.def'],
    ['a session cookie that is no session', '__Host-signal_session=not-a-token'],
  ])(
    'when the request has no Authorization and %s, then 401 UNAUTHORIZED with rate headers',
    async (_label, cookie) => {
      for (const path of ['/v1/signals', '/v1/stats', '/v1/webhooks', '/v1/signals/stream']) {
        const res = await request(gw.url).get(path).set('Cookie', cookie).expect(401);
        expect(errorEnvelopeSchema.parse(res.body).error.code).toBe('UNAUTHORIZED');
        expectRateHeaders(res);
      }
    },
  );

  it.each([
    ['GET', '/'],
    ['GET', '/v2/signals'],
    ['GET', '/metrics'],
    ['OPTIONS', '/v1/nothing-here'],
    ['POST', '/docs'],
  ])(
    'when %s %s matches no route, then 404 NOT_FOUND still carries the rate-limit headers',
    async (method, path) => {
      const { key } = await gw.account();
      const agent = request(gw.url);
      const call =
        method === 'GET' ? agent.get(path) : method === 'POST' ? agent.post(path) : agent.options(path);
      const res = await call.set('Authorization', `Bearer ${key}`).expect(404);
      expect(errorEnvelopeSchema.parse(res.body).error.code).toBe('NOT_FOUND');
      expectRateHeaders(res);
    },
  );

  it('when a JSON client asks for /, then its 404 counts once against its address, as any other path outside the API', async () => {
    const window = async (path: string) => {
      const res = await request(gw.url).get(path).set('Accept', '*/*').expect(404);
      return {
        remaining: Number(res.headers['x-ratelimit-remaining']),
        reset: res.headers['x-ratelimit-reset'],
      };
    };
    // Three requests in one window (a minute that turns between them starts the count again).
    let seen: Array<{ remaining: number; reset: unknown }> = [];
    for (let i = 0; i < 3 && new Set(seen.map((w) => w.reset)).size !== 1; i++)
      seen = [await window('/robots.txt'), await window('/'), await window('/robots.txt')];
    const [before, root, after] = seen.map((w) => w.remaining);
    expect([before! - root!, root! - after!]).toEqual([1, 1]);
  });

  it.each([
    ['/v1/signals', 'GET, HEAD, OPTIONS'],
    ['/v1/signals/stream', 'GET, HEAD, OPTIONS'],
    ['/v1/webhooks/wh_01J0000000000000000000000/deliveries', 'GET, HEAD, OPTIONS'],
    ['/v1/webhooks/wh_01J0000000000000000000000', 'GET, HEAD, PATCH, DELETE, OPTIONS'],
    ['/v1/account/keys', 'GET, HEAD, POST, OPTIONS'],
  ])(
    'when OPTIONS asks about %s, then 204 names its methods in Allow, with the rate-limit headers and no body',
    async (path, allow) => {
      const res = await request(gw.url).options(path).expect(204);
      expect(res.headers.allow).toBe(allow);
      expect(res.text).toBe('');
      expectRateHeaders(res);
    },
  );

  it('when OPTIONS asks about a public path, then it counts nothing against the address, as the docs pages do', async () => {
    const options = async () => {
      const res = await request(gw.url).options('/v1/stats').expect(204);
      return {
        remaining: Number(res.headers['x-ratelimit-remaining']),
        reset: res.headers['x-ratelimit-reset'],
      };
    };
    // Three in one window (a minute that turns between them starts the count again).
    let seen: Array<{ remaining: number; reset: unknown }> = [];
    for (let i = 0; i < 3 && new Set(seen.map((w) => w.reset)).size !== 1; i++)
      seen = [await options(), await options(), await options()];
    expect(new Set(seen.map((w) => w.remaining)).size).toBe(1);
    expect(seen[0]!.remaining).toBeGreaterThan(0);
  });

  it('when the key was revoked, then the 401 an unknown key gets: same code, same message', async () => {
    const { key, keyId, accountId } = await gw.account();
    await api(key).expect(200);
    valueOrThrow(await revokeApiKey(gw.deps.accounts, accountId, keyId));
    const revoked = await api(key).expect(401);
    const unknown = await api(generateApiKey()).expect(401);
    expect(revoked.body.error.code).toBe('UNAUTHORIZED');
    expect(revoked.body.error.message).toBe(unknown.body.error.message);
    expect(unknown.body.error.message).toMatch(/invalid or missing API key/i);
    // A key that was never seen by this gateway before its revocation is told the same.
    const other = await gw.account();
    valueOrThrow(await revokeApiKey(gw.deps.accounts, other.accountId, other.keyId));
    expect((await api(other.key).expect(401)).body.error).toMatchObject({
      code: 'UNAUTHORIZED',
      message: unknown.body.error.message,
    });
  });

  it('when the key has expired, then 401 KEY_EXPIRED asking for a new key', async () => {
    const { accountId } = await gw.account();
    const created = valueOrThrow(
      await createApiKey(gw.deps.accounts, accountId, 'short', new Date(Date.now() + 60_000)),
    );
    await api(created.key).expect(200);
    // The gateway runs in this process: its clock is moved past the expiry instead of waited on
    // (only Date is faked; timers and I/O run as ever).
    jest.useFakeTimers({
      doNotFake: EVERYTHING_BUT_DATE,
      advanceTimers: true,
      now: Date.now() + 120_000,
    });
    try {
      const res = await api(created.key).expect(401);
      expect(res.body.error.code).toBe('KEY_EXPIRED');
      expect(res.body.error.message).toMatch(/generate a new key/i);
    } finally {
      jest.useRealTimers();
    }
  });

  it('when the client sends internal headers, then they are not passed to the service', async () => {
    const { key } = await gw.account();
    upstreamEcho.requests.length = 0;
    await request(gw.url)
      .get('/v1/stats?period=all')
      .set('Authorization', `Bearer ${key}`)
      .set('X-Internal-Account', 'acc_evil')
      .expect(200);
    const seen = upstreamEcho.requests[0]!;
    expect(seen.headers['x-internal-account']).toBeUndefined();
    expect(seen.headers.authorization).toMatch(/^Bearer ey/);
    expect(seen.headers.authorization).not.toContain(key);
    expect(seen.path).toBe('/v1/stats?period=all');
  });
});

describe('rate limits', () => {
  it('when 200 requests arrive at once on a 60/min plan, then exactly 60 are admitted and the rest get 429 with retry_after', async () => {
    const { key } = await gw.account({ per_minute: 60, per_day: 10_000 });
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        request(gw.url).get('/v1/signals?limit=1').set('Authorization', `Bearer ${key}`),
      ),
    );
    // Exactly 60 per minute window: a burst that a loaded machine spreads across a minute's end
    // is two bursts, 60 admitted in the one that refused and no more than 60 in the other.
    const exactness = exactnessViolations(results.map(limitedResponse), 60);
    expect(exactness.violations).toEqual([]);
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    if (exactness.windows === 1) expect([ok.length, limited.length]).toEqual([60, 140]);
    for (const r of limited) {
      expect(r.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number.isInteger(r.body.error.retry_after)).toBe(true);
      expect(r.body.error.retry_after).toBeGreaterThan(0);
      expect(r.body.error.retry_after).toBeLessThanOrEqual(60);
      expect(r.headers['retry-after']).toBe(String(r.body.error.retry_after));
      expect(r.body.error.message).toBe(`Rate limit exceeded. Retry after ${r.body.error.retry_after} s.`);
      expect(r.headers['x-ratelimit-remaining']).toBe('0');
    }
  });

  it('when requests come one by one, then X-RateLimit-Remaining counts down by one', async () => {
    const { key } = await gw.account({ per_minute: 5, per_day: 100 });
    const responses = [];
    for (let i = 0; i < 6; i++) responses.push(limitedResponse(await api(key)));
    // Per minute window (a loaded machine can spread six requests over two): exact and counting down.
    const exactness = exactnessViolations(responses, 5);
    expect(exactness.violations).toEqual([]);
    if (exactness.windows === 1)
      expect(responses.map((r) => r.remaining)).toEqual(['4', '3', '2', '1', '0', '0']);
  });

  it('when the day window is used up, then 429 with retry_after until the day resets and headers describe the day', async () => {
    const { key } = await gw.account({ per_minute: 100, per_day: 3 });
    for (let i = 0; i < 3; i++) await api(key).expect(200);
    const res = await api(key).expect(429);
    // Until the day's end as the server saw it when it responded: its Date header, to the second
    // (Node refreshes that string once a second, so the response's own second may be one on).
    const respondedAt = Date.parse(res.headers.date!) / 1000;
    const untilMidnight = Number(res.headers['x-ratelimit-reset']) - respondedAt;
    expect([untilMidnight - 1, untilMidnight, untilMidnight + 1]).toContain(res.body.error.retry_after);
    expect(res.headers['x-ratelimit-limit']).toBe('3');
    expect(Number(res.headers['x-ratelimit-reset'])).toBe((Math.floor(respondedAt / 86_400) + 1) * 86_400);
  });

  it('when several keys of one account are used, then they share the account limit', async () => {
    const { key, accountId } = await gw.account({ per_minute: 4, per_day: 100 });
    const second = valueOrThrow(await createApiKey(gw.deps.accounts, accountId, 'second'));
    await api(key).expect(200);
    await api(second.key).expect(200);
    await api(key).expect(200);
    await api(second.key).expect(200);
    await api(key).expect(429);
    await api(second.key).expect(429);
  });

  it('when a key is revoked mid-burst, then every request after the revocation fails', async () => {
    const { key, keyId, accountId } = await gw.account({ per_minute: 10_000, per_day: 100_000 });
    const statuses: number[] = [];
    let revokedAt = -1;
    for (let i = 0; i < 30; i++) {
      if (i === 15) {
        valueOrThrow(await revokeApiKey(gw.deps.accounts, accountId, keyId));
        revokedAt = i;
      }
      statuses.push((await api(key)).status);
    }
    expect(statuses.slice(0, revokedAt).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(revokedAt).every((s) => s === 401)).toBe(true);
  });
});

describe('two gateway instances sharing Redis and MongoDB', () => {
  it('when a key is revoked through one instance, then the very next request on the other fails (and both serve GET alike)', async () => {
    const other = await anotherGateway('gw_auth_b');
    try {
      const { key, keyId, accountId } = await gw.account({ per_minute: 1000, per_day: 10_000 });
      const viaUndici = await request(other.url)
        .get('/v1/signals')
        .set('Authorization', `Bearer ${key}`)
        .expect(200);
      const viaRaw = await request(gw.url)
        .get('/v1/signals')
        .set('Authorization', `Bearer ${key}`)
        .expect(200);
      expect(viaRaw.body).toEqual(viaUndici.body);
      const comparable = (h: Record<string, string>) =>
        Object.keys(h)
          .filter((n) => !['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset'].includes(n))
          .sort()
          .map((n) => `${n}: ${h[n]}`);
      expect(comparable(viaRaw.headers)).toEqual(comparable(viaUndici.headers));
      valueOrThrow(await revokeApiKey(gw.deps.accounts, accountId, keyId));
      await request(other.url).get('/v1/signals').set('Authorization', `Bearer ${key}`).expect(401);
    } finally {
      await other.stop();
    }
  });

  it('when both instances take a burst for one account, then the limit holds across them', async () => {
    const other = await anotherGateway('gw_auth_c');
    try {
      const { key } = await gw.account({ per_minute: 30, per_day: 10_000 });
      const results = await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          request(i % 2 ? other.url : gw.url)
            .get('/v1/signals?limit=1')
            .set('Authorization', `Bearer ${key}`),
        ),
      );
      const exactness = exactnessViolations(results.map(limitedResponse), 30);
      expect(exactness.violations).toEqual([]);
      if (exactness.windows === 1) expect(results.filter((r) => r.status === 200)).toHaveLength(30);
    } finally {
      await other.stop();
    }
  });
});

describe('many requests over few connections to a service', () => {
  it('when 150 clients read different signals at once over two upstream connections, then each gets the response to its own request', async () => {
    // Two connections: most of these requests wait for one to be free.
    const piped = await anotherGateway('gw_auth_pipe', { UPSTREAM_CONNECTIONS: '2' });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const created = await request(signals.url)
          .post('/internal/signals')
          .set(signals.ingestAuth)
          .send(signalInput())
          .expect(201);
        ids.push(String(created.body.data.id));
      }
      const { key } = await gw.account({ per_minute: 1000, per_day: 10_000 });
      // Every fifth a malformed id: the service's 404 envelope names the request id it was sent.
      const paths = Array.from({ length: 150 }, (_, i) =>
        i % 5 === 4 ? `/v1/signals/sig_${i}` : `/v1/signals/${ids[i % ids.length]}`,
      );
      const responses = await Promise.all(
        paths.map((path) => request(piped.url).get(path).set('Authorization', `Bearer ${key}`)),
      );
      const got = responses.map((res) =>
        res.status === 200
          ? `200 ${String(res.body.data.id)}`
          : `${res.status} ${String(errorEnvelopeSchema.parse(res.body).error.request_id === res.headers['x-request-id'])}`,
      );
      expect(got).toEqual(paths.map((path, i) => (i % 5 === 4 ? '404 true' : `200 ${path.slice(12)}`)));
    } finally {
      await piped.stop();
    }
  });
});

describe('upstream faults', () => {
  it('when the upstream is down, then 503 SERVICE_UNAVAILABLE envelope, not a hang', async () => {
    const { key } = await gw.account();
    const res = await request(gw.url).get('/v1/webhooks').set('Authorization', `Bearer ${key}`).expect(503);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expectRateHeaders(res);
  });

  it('when the upstream is too slow, then 504 GATEWAY_TIMEOUT', async () => {
    // A service that answers only after the test (the receiver drops it on close), behind a
    // gateway with a short upstream timeout: the timeout decides.
    const silent = await startReceiver(() => ({ status: 200, delayMs: 600_000 }));
    const impatient = await startGateway({
      label: 'gw_auth_timeout',
      upstreams: { signals: silent.url, stats: silent.url, webhooks: silent.url },
      env: { UPSTREAM_TIMEOUT_MS: '300' },
    });
    try {
      const { key } = await impatient.account();
      const res = await request(impatient.url)
        .get('/v1/stats')
        .set('Authorization', `Bearer ${key}`)
        .expect(504);
      expect(res.body.error.code).toBe('GATEWAY_TIMEOUT');
    } finally {
      await impatient.stop();
      await silent.close();
    }
  });

  it('when the request target and headers would be too large for the service, then the gateway responds 413 with its own request id', async () => {
    const { key } = await gw.account();
    const res = await request(gw.url)
      .get(`/v1/stats?period=all&pad=${'q'.repeat(13_000)}`)
      .set('Authorization', `Bearer ${key}`)
      .expect(413);
    expect(res.body.error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      request_id: res.headers['x-request-id'],
    });
    expectRateHeaders(res);
  });

  it('when an unknown /v1 route is called with a valid key, then 404 envelope with rate headers', async () => {
    const { key } = await gw.account();
    const res = await request(gw.url).get('/v1/nothing').set('Authorization', `Bearer ${key}`).expect(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expectRateHeaders(res);
  });
});

describe('metrics', () => {
  it('when requests carry ids, unknown paths and bad keys, then the metric labels name route patterns only, and every limiter decision is counted', async () => {
    const metricsServer = await startObservability(
      { METRICS_PORT: 0, METRICS_HOST: '127.0.0.1', ACCESS_LOG_SAMPLE: 1 },
      'api-gateway',
      silentLogger,
    );
    try {
      const { key } = await gw.account();
      const auth = { Authorization: `Bearer ${key}` };
      await request(gw.url).get('/v1/signals/sig_01JABCDEFGHJKMNPQRSTVWXYZ0').set(auth);
      await request(gw.url).get('/v1/nothing/here-1234').set(auth).expect(404);
      await request(gw.url).get('/v1/signals/sig_x?page=2').set('Authorization', 'Bearer nope').expect(401);
      const text = await (await fetch(metricsServer.url)).text();
      const routes = [
        ...text.matchAll(/http_request_duration_seconds_count\{service="api-gateway",[^}]*route="([^"]*)"/g),
      ].map((m) => m[1]);
      expect(routes).toEqual(expect.arrayContaining(['/v1/signals', 'unmatched']));
      expect(routes.filter((r) => /sig_|here-1234|\?/.test(r ?? ''))).toEqual([]);
      expect(text).toMatch(/ratelimit_decisions_total\{decision="allowed"\} [1-9]/);
      expect(text).toMatch(/ratelimit_decisions_total\{decision="unauthorized"\} [1-9]/);
    } finally {
      await metricsServer.close();
    }
  });
});

/**
 * Writes `head` (and `body`, after a 100 Continue when `waitForContinue`) on a raw connection and
 * returns everything the gateway wrote until it closed the connection or `quietMs` passed.
 */
async function rawExchange(
  head: string,
  opts: { body?: string; waitForContinue?: boolean; quietMs?: number } = {},
): Promise<string> {
  const url = new URL(gw.url);
  const socket = connect(Number(url.port), url.hostname);
  let got = '';
  return new Promise<string>((resolve, reject) => {
    let timer = setTimeout(() => finish(), opts.quietMs ?? 1500);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    socket.on('error', reject);
    socket.on('close', finish);
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (
        opts.waitForContinue &&
        opts.body !== undefined &&
        got.startsWith('HTTP/1.1 100 Continue\r\n\r\n')
      ) {
        socket.write(opts.body);
        opts = { ...opts, body: undefined };
      }
      clearTimeout(timer);
      timer = setTimeout(() => finish(), opts.quietMs ?? 1500);
    });
    socket.write(head);
    if (!opts.waitForContinue && opts.body !== undefined) socket.write(opts.body);
  });
}

describe('request bodies refused on their headers', () => {
  const post = (key: string, headers: string) =>
    `POST /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n${headers}\r\n`;

  it('when a body is declared larger than any route takes, then 413 at once with the connection closed, before any of it is sent', async () => {
    const { key } = await gw.account();
    const response = await rawExchange(
      post(key, 'Content-Type: application/json\r\nContent-Length: 2000000\r\n'),
    );
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(response).toMatch(/\r\nX-RateLimit-Limit: 60\r\n/i);
    expect(response).toContain('"code":"PAYLOAD_TOO_LARGE"');
  });

  it('when a large upload asks to continue, then it is refused with 413 and never invited', async () => {
    const { key } = await gw.account();
    const response = await rawExchange(
      post(key, 'Content-Type: application/json\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n'),
    );
    expect(response).not.toContain('100 Continue');
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('when a small JSON upload asks to continue, then it is invited and reaches the service', async () => {
    const { key } = await gw.account();
    const body = '{"a":1}';
    const response = await rawExchange(
      post(
        key,
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n`,
      ),
      // Read to the close the response ends with: the service's answer comes after the invitation,
      // and a loaded machine can keep it longer than the default quiet time.
      { body, waitForContinue: true, quietMs: 15_000 },
    );
    // The signals service read it: its response to a POST on a GET-only path, 405 with Allow.
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 405 /);
    expect(response).toContain('POST is not allowed here; use GET, HEAD.');
  });

  it('when an HTTP/1.1 request has no Host header, then the 400 envelope with a request id and rate-limit headers, not a bare 400', async () => {
    const response = await rawExchange('GET /v1/signals HTTP/1.1\r\n\r\n');
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toMatch(/\r\nX-Request-Id: req_/i);
    expect(response).toContain('"message":"The Host header is required."');
    expect(response).toMatch(/\r\nX-RateLimit-Limit: \d+\r\n/i);
  });

  it('when a request has two Host headers, then the 400 envelope naming them, and the connection ends', async () => {
    const { key } = await gw.account();
    const response = await rawExchange(
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nHost: elsewhere\r\n\r\n`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(response).toMatch(/\r\nX-Request-Id: req_/i);
    expect(response).toContain('"message":"A request carries one Host header; this one has several."');
    expect(response).not.toContain('"success":true');
  });

  it('when a request asks for a tunnel with CONNECT, then the 400 envelope with rate-limit headers, and the connection ends', async () => {
    const response = await rawExchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(response).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(response).toMatch(/\r\nX-RateLimit-Limit: \d+\r\n/i);
    expect(response).toContain('"message":"CONNECT is not served here: this is an API, not a proxy."');
  });

  it('when a request carries an expectation other than 100-continue, then it is served as if it had none', async () => {
    const { key } = await gw.account();
    const response = await rawExchange(
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(response).toContain('"success":true');
  });

  it.each([
    [
      'a charset other than UTF-8',
      'Content-Type: application/json; charset=latin1',
      'charset "latin1" is not supported: JSON bodies are UTF-8.',
    ],
    [
      'a Content-Encoding the services do not inflate',
      'Content-Type: application/json\r\nContent-Encoding: compress',
      'Content-Encoding "compress" is not supported: send the body as is, or gzip, deflate, br or zstd.',
    ],
  ])(
    'when an upload that asks to continue declares %s, then 415 at once naming it, never invited, and the connection ends',
    async (_what, headers, message) => {
      const { key } = await gw.account();
      const response = await rawExchange(
        post(key, `${headers}\r\nContent-Length: 30000\r\nExpect: 100-continue\r\n`),
      );
      expect(response).not.toContain('100 Continue');
      expect(response).toMatch(/^HTTP\/1\.1 415 /);
      expect(response).toMatch(/\r\nConnection: close\r\n/i);
      expect(response).toContain(`"message":${JSON.stringify(message)}`);
    },
  );

  it.each(['Authorization', 'Idempotency-Key', 'Content-Type'])(
    'when a request carries two %s headers, then the 400 envelope naming it, and the connection ends',
    async (name) => {
      const { key } = await gw.account();
      const { key: other } = await gw.account();
      const lines = {
        Authorization: `Authorization: Bearer ${key}\r\nAuthorization: Bearer ${other}\r\n`,
        'Idempotency-Key': `Authorization: Bearer ${key}\r\nIdempotency-Key: a1\r\nIdempotency-Key: a2\r\n`,
        'Content-Type': `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\n`,
      }[name];
      const response = await rawExchange(
        `POST /v1/webhooks HTTP/1.1\r\nHost: gw\r\n${lines}Content-Length: 2\r\n\r\n{}`,
      );
      expect(response).toMatch(/^HTTP\/1\.1 400 /);
      expect(response).toMatch(/\r\nConnection: close\r\n/i);
      expect(response).toContain(`"message":"A request carries one ${name} header; this one has several."`);
      expect(response).not.toContain('"success":true');
    },
  );

  it('when a body is not JSON, then 415 at once without reading it', async () => {
    const { key } = await gw.account();
    const response = await rawExchange(post(key, 'Content-Type: text/plain\r\nContent-Length: 5000000\r\n'));
    expect(response).toMatch(/^HTTP\/1\.1 415 /);
    expect(response).toContain('"code":"UNSUPPORTED_MEDIA_TYPE"');
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
  });
});
