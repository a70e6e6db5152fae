import { ROUTE_LIST } from '@signal/contracts';
import request from 'supertest';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * What the document promises of every response, checked over the gateway's own routes from the
 * route table: the X-RateLimit-* headers, whatever refused the request and however early, with a
 * reset that has not passed.
 */
let gw: GatewayHarness;
let token: string;
const nowhere = 'http://127.0.0.1:9';
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  gw = await startGateway({
    label: 'gw_contract',
    upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
  });
  const { email } = await gw.account(undefined, PASSWORD);
  token = (await request(gw.url).post('/v1/auth/login').send({ email, password: PASSWORD }).expect(200)).body
    .data.token as string;
});
afterAll(() => gw.stop());

function expectRateHeaders(res: request.Response, what: string) {
  const [limit, remaining, reset] = ['limit', 'remaining', 'reset'].map(
    (h) => res.headers[`x-ratelimit-${h}`],
  );
  expect({ what, limit, remaining }).toEqual({
    what,
    limit: expect.stringMatching(/^\d+$/),
    remaining: expect.stringMatching(/^\d+$/),
  });
  // The reset is a moment to come (to the second: it may be the current one's end).
  expect({ what, reset: Number(reset) >= Math.floor(Date.now() / 1000) }).toEqual({ what, reset: true });
}

const gatewayWrites = ROUTE_LIST.filter((r) => r.owner === 'gateway' && r.method !== 'get');
const concrete = (path: string) => path.replace(/\{[a-z_]+\}/g, 'key_01J0000000000000000000000');

describe('the rate-limit headers on every gateway response', () => {
  it.each(gatewayWrites.map((r) => [r.method.toUpperCase(), r.path] as const))(
    'when %s %s is sent a body that is not JSON, then the refusal carries the X-RateLimit-* headers, with a session and without',
    async (method, path) => {
      for (const auth of [{ Authorization: `Bearer ${token}` }, {}]) {
        const agent = request(gw.url);
        const call = method === 'DELETE' ? agent.delete(concrete(path)) : agent.post(concrete(path));
        const res = await call.set({ ...auth, 'Content-Type': 'text/plain' }).send('not json');
        if ('Authorization' in auth && method !== 'DELETE')
          expect({ path, status: res.status }).toEqual({ path, status: 415 });
        expectRateHeaders(res, `${method} ${path} ${res.status}`);
      }
    },
  );

  it('when a dashboard route is sent a body that is not JSON, then the 415 carries the X-RateLimit-* headers', async () => {
    for (const path of [
      '/v1/dashboard/keys',
      '/v1/dashboard/password',
      '/v1/dashboard/session',
      '/v1/dashboard/signup',
    ]) {
      const res = await request(gw.url).post(path).set('Content-Type', 'text/plain').send('not json');
      expectRateHeaders(res, `POST ${path} ${res.status}`);
    }
  });

  it('when a query string is 20 kB long, then the response carries the X-RateLimit-* headers with a reset to come', async () => {
    const { key } = await gw.account();
    for (const size of [8_000, 15_000, 20_000, 40_000, 70_000]) {
      for (const credential of [key, token]) {
        const res = await request(gw.url)
          .get(`/v1/signals?q=${'a'.repeat(size)}`)
          .set('Authorization', `Bearer ${credential}`);
        expectRateHeaders(res, `GET /v1/signals with a ${size}-byte query ${res.status}`);
      }
      const bare = await request(gw.url).get(`/v1/signals?q=${'a'.repeat(size)}`);
      expectRateHeaders(bare, `GET /v1/signals with a ${size}-byte query, no credential ${bare.status}`);
    }
    for (const path of ['/v1/signals', '/v1/account/keys', '/docs', '/v1/nothing']) {
      const res = await request(gw.url)
        .get(`${path}?q=${'a'.repeat(20_000)}`)
        .set('Authorization', `Bearer ${token}`);
      expectRateHeaders(res, `GET ${path} ${res.status}`);
    }
  });
});
