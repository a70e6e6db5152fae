import {
  infraUrls,
  startOfAMinuteIfLate,
  startReceiver,
  startTcpProxy,
  viaProxy,
  waitFor,
  type Receiver,
  type TcpProxy,
} from '@signal/test-kit';
import request from 'supertest';
import { generateApiKey } from '../src/accounts/domain/api-key';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * Cheap rejections first: the store is cut off (a TCP proxy in front of the MongoDB-wire
 * server), so any request that still reached it would wait for it and get 503. Responses
 * that stay 401/429, fast, prove no store lookup happened.
 */
let mongo: TcpProxy;
let gw: GatewayHarness;
let stats: Receiver;

beforeAll(async () => {
  const url = new URL(infraUrls().mongoUrl);
  mongo = await startTcpProxy(url.hostname, Number(url.port || 27017));
  stats = await startReceiver(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"success":true}',
  }));
  const nowhere = 'http://127.0.0.1:9';
  gw = await startGateway({
    label: 'gw_reject',
    upstreams: { signals: nowhere, stats: stats.url, webhooks: nowhere },
    env: { MONGO_URL: viaProxy(infraUrls().mongoUrl, mongo), IP_RATE_LIMIT_PER_MINUTE: '6' },
  });
});
afterAll(async () => {
  mongo.restore();
  await gw.stop();
  await mongo.close();
  await stats.close();
});

const call = (authorization: string) =>
  request(gw.url).get('/v1/stats').set('Authorization', authorization).timeout(10_000);

async function responseTo(authorization: string): Promise<{ status: number; code?: string }> {
  const res = await call(authorization);
  return { status: res.status, code: res.body?.error?.code };
}

describe('cheap rejections with the store cut off', () => {
  it('when keys are malformed, fail their checksum, or were already found unknown, then 401 without the store; past the per-IP limit a never-seen key is still looked up, never refused for its address', async () => {
    // The per-IP counts below must all fall in one UTC minute (the guard's window); the test
    // takes up to ~10 s.
    await startOfAMinuteIfLate();
    const { key } = await gw.account({ per_minute: 1000, per_day: 10_000 });
    // The known key and one unknown key are looked up once, while the store is there.
    expect((await call(`Bearer ${key}`)).status).toBe(200);
    const unknown = generateApiKey();
    expect((await responseTo(`Bearer ${unknown}`)).status).toBe(401);

    mongo.cut();
    const body = unknown.slice(8, 51);
    const badChecksum = `sk_live_${body}${unknown.endsWith('A') ? 'B' : 'A'}${unknown.slice(-5)}`;
    for (const auth of ['Bearer sk_live_short', `Bearer ${badChecksum}`, `Bearer ${unknown}`]) {
      const r = await responseTo(auth);
      // 401, not the 503 a lookup in the cut store would end in: the store was not asked.
      expect({ auth, status: r.status, code: r.code }).toEqual({ auth, status: 401, code: 'UNAUTHORIZED' });
    }
    // A known key keeps working (memory) while the store is away, and readiness says so.
    expect((await call(`Bearer ${key}`)).status).toBe(200);
    await waitFor(
      async () => (await request(gw.url).get('/readyz')).body.data?.status === 'degraded',
      8000,
      100,
      'readiness to say degraded',
    );

    // Failures 5 and 6 are allowed, the 7th is refused: the address is at 429 now. A key never
    // seen before is still looked up (it may be valid: the address's failures are not its
    // own), and with the store away that lookup cannot complete: 503, not 429.
    await call('Bearer nope').expect(401);
    await call('Bearer nope').expect(401);
    await call('Bearer nope').expect(429);
    const unseen = await responseTo(`Bearer ${generateApiKey()}`);
    expect(unseen).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    mongo.restore();
  });
});
