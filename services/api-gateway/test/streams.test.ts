import { get, type IncomingMessage } from 'node:http';
import { valueOrThrow } from '@signal/service-kit';
import request from 'supertest';
import { revokeApiKey } from '../src/accounts/domain/accounts.use-cases';
import { startGateway, type GatewayHarness } from './gateway-harness';
import { startStreamStandIn, type StreamStandIn } from './stream-stand-in';

/**
 * Live streams through the gateway: the opening request is a request like any other (its key,
 * its plan's windows and headers), each account has a cap of open streams across gateways, and a
 * stream ends with a last event when its key is revoked or the gateway shuts down. The service
 * here is a stand-in that streams an event every 20 ms (the signals service's own stream has its
 * own tests).
 */
let standIn: StreamStandIn;
let serviceUrl: string;

beforeAll(async () => {
  standIn = await startStreamStandIn();
  serviceUrl = standIn.url;
});
afterAll(async () => {
  await standIn.close();
});

const gatewayFor = (label: string) =>
  startGateway({ label, upstreams: { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl } });

interface Stream {
  res: IncomingMessage;
  /** Resolves with everything received once the stream ends. */
  ended: Promise<string>;
  /** Resolves once `n` events have arrived. */
  events(n: number): Promise<void>;
  close(): void;
}

function openStream(url: string, key: string, headers?: Record<string, string>): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = get(
      `${url}/v1/signals/stream`,
      { headers: headers ?? { authorization: `Bearer ${key}` }, agent: false },
      (res) => {
        let text = '';
        const waiters: Array<{ n: number; done: () => void }> = [];
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          const count = (text.match(/^event: /gm) ?? []).length;
          for (const w of waiters.splice(0))
            if (count >= w.n) w.done();
            else waiters.push(w);
        });
        const ended = new Promise<string>((done) => {
          res.once('end', () => done(text));
          res.once('error', () => done(text));
          res.once('close', () => done(text));
        });
        resolve({
          res,
          ended,
          events: (n) =>
            new Promise<void>((done) => {
              if ((text.match(/^event: /gm) ?? []).length >= n) done();
              else waiters.push({ n, done });
            }),
          close: () => req.destroy(),
        });
      },
    );
    req.once('error', reject);
  });
}

describe('live streams through the gateway', () => {
  let gw: GatewayHarness;
  beforeAll(async () => {
    gw = await gatewayFor('gw_streams');
  });
  afterAll(() => gw.stop());

  it('when a key opens a stream, then the events come through as they are sent, with the rate-limit headers on the opening response', async () => {
    const { key } = await gw.account({ per_minute: 60, per_day: 10_000 });
    const s = await openStream(gw.url, key);
    try {
      expect(s.res.statusCode).toBe(200);
      expect(s.res.headers['content-type']).toContain('text/event-stream');
      expect(s.res.headers['x-ratelimit-limit']).toBe('60');
      expect(s.res.headers['x-ratelimit-remaining']).toBe('59');
      expect(s.res.headers['cache-control']).toBe('no-store');
      await s.events(3);
    } finally {
      s.close();
    }
    // Opening cost one request; the events none (unless the next request is the first of a new
    // minute's window: X-RateLimit-Reset names the window).
    const next = await request(gw.url).get('/v1/signals/sig_0').set('Authorization', `Bearer ${key}`);
    const sameWindow = next.headers['x-ratelimit-reset'] === s.res.headers['x-ratelimit-reset'];
    expect(next.headers['x-ratelimit-remaining']).toBe(sameWindow ? '58' : '59');
    // A HEAD of the stream is not stored by a cache on the way either.
    const head = await request(gw.url).head('/v1/signals/stream').set('Authorization', `Bearer ${key}`);
    expect([head.status, head.headers['cache-control']]).toEqual([200, 'no-store']);
  });

  it("when an account has its plan's most streams open, then the next is a 429 naming the cap, on any gateway (a query that is not valid a 400); closing one frees its slot", async () => {
    const { key } = await gw.account({ per_minute: 60, per_day: 10_000, max_streams: 2 });
    const other = await startGateway({
      label: 'gw_streams_b',
      upstreams: { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl },
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
    });
    const streams: Stream[] = [];
    try {
      streams.push(await openStream(gw.url, key), await openStream(other.url, key));
      expect(streams.map((s) => s.res.statusCode)).toEqual([200, 200]);
      const refused = await request(other.url)
        .get('/v1/signals/stream')
        .set('Authorization', `Bearer ${key}`);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(refused.body.error.message).toContain('the most its plan allows (2)');
      expect(refused.headers['x-ratelimit-limit']).toBe('60');
      // A query that is not valid is told so whatever streams are open: no slot would serve it.
      const invalid = await request(other.url)
        .get('/v1/signals/stream?type=bogus')
        .set('Authorization', `Bearer ${key}`);
      expect([invalid.status, invalid.body.error.code]).toEqual([400, 'VALIDATION_ERROR']);
      const first = streams.shift()!;
      first.close();
      await first.ended;
      // The gateway frees the slot once it sees the client go.
      let reopened: Stream | undefined;
      for (let i = 0; i < 50 && reopened?.res.statusCode !== 200; i++) {
        reopened?.close();
        await new Promise((r) => setTimeout(r, 20));
        reopened = await openStream(gw.url, key);
      }
      streams.push(reopened!);
      expect(reopened!.res.statusCode).toBe(200);
    } finally {
      for (const s of streams) s.close();
      await other.stop();
    }
  });

  it('when the key of an open stream is revoked, then the stream ends with an error event', async () => {
    const { key, keyId, accountId } = await gw.account({ per_minute: 60, per_day: 10_000 });
    const s = await openStream(gw.url, key);
    await s.events(1);
    valueOrThrow(await revokeApiKey(gw.deps.accounts, accountId, keyId));
    const text = await s.ended;
    expect(text.trimEnd().split('\n\n').at(-1)).toBe(
      'event: error\ndata: {"code":"UNAUTHORIZED","message":"The API key was revoked."}',
    );
  });
});

describe('live streams when a credential ends on another gateway', () => {
  // The gateway holding the streams never checks them by itself during the test: only the
  // announcement of the other gateway's revocation can end them.
  let holder: GatewayHarness;
  let other: GatewayHarness;
  beforeAll(async () => {
    other = await gatewayFor('gw_streams_notices');
    holder = await startGateway({
      label: 'gw_streams_notices_b',
      upstreams: { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl },
      share: { dbName: other.config.GATEWAY_DB, redisPrefix: other.config.REDIS_PREFIX },
      env: { STREAM_CHECK_INTERVAL_MS: '3600000' },
    });
  });
  afterAll(async () => {
    await holder.stop();
    await other.stop();
  });

  it('when a key is revoked through the API of another gateway, then its open stream ends at once with the reason, without waiting for a check', async () => {
    const password = 'revocation passphrase';
    const { key, keyId, email } = await other.account(undefined, password);
    const s = await openStream(holder.url, key);
    await s.events(1);
    const login = await request(other.url).post('/v1/auth/login').send({ email, password }).expect(200);
    await request(other.url)
      .delete(`/v1/account/keys/${keyId}`)
      .set('Authorization', `Bearer ${login.body.data.token as string}`)
      .expect(200);
    const text = await s.ended;
    expect(text.trimEnd().split('\n\n').at(-1)).toBe(
      'event: error\ndata: {"code":"UNAUTHORIZED","message":"The API key was revoked."}',
    );
  });

  it('when a dashboard session logs out on another gateway, then the streams it opened end at once', async () => {
    const signup = await request(other.url)
      .post('/v1/dashboard/signup')
      .send({ email: `notice-${Date.now()}@example.com`, password: 'a-long-enough-password' })
      .expect(201);
    const cookie = ([] as string[]).concat(signup.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const s = await openStream(holder.url, '', { cookie });
    expect(s.res.statusCode).toBe(200);
    await s.events(1);
    await request(other.url)
      .delete('/v1/dashboard/session')
      .set({ Cookie: cookie, 'X-CSRF-Token': signup.body.data.csrf_token as string })
      .expect(200);
    const text = await s.ended;
    expect(text.trimEnd().split('\n\n').at(-1)).toMatch(/^event: error\ndata: \{"code":"UNAUTHORIZED"/);
  });
});

describe('live streams with a dashboard session', () => {
  it("when a dashboard session opens streams, then they count against the account's cap like a key's", async () => {
    const gw = await gatewayFor('gw_streams_session');
    const streams: Stream[] = [];
    try {
      const signup = await request(gw.url)
        .post('/v1/dashboard/signup')
        .send({ email: `stream-${Date.now()}@example.com`, password: 'a-long-enough-password' })
        .expect(201);
      const cookie = ([] as string[]).concat(signup.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
      for (let i = 0; i < 5; i++) streams.push(await openStream(gw.url, '', { cookie }));
      expect(streams.map((s) => s.res.statusCode)).toEqual([200, 200, 200, 200, 200]);
      await streams[0]!.events(1);
      const refused = await request(gw.url).get('/v1/signals/stream').set('Cookie', cookie);
      expect(refused.status).toBe(429);
      expect(refused.body.error.message).toContain('the most its plan allows (5)');
    } finally {
      for (const s of streams) s.close();
      await gw.stop();
    }
  });
});

describe('gateway shutdown', () => {
  it('when the gateway shuts down, then each open stream ends with a reconnect event', async () => {
    const gw = await gatewayFor('gw_streams_stop');
    const { key } = await gw.account({ per_minute: 60, per_day: 10_000 });
    const s = await openStream(gw.url, key);
    await s.events(1);
    await gw.stop();
    const text = await s.ended;
    expect(text.trimEnd().split('\n\n').at(-1)).toMatch(/^event: reconnect\ndata: \{"reason":"shutdown"/);
  });
});
