import request from 'supertest';
import { valueOrThrow } from '@signal/service-kit';
import { changePlan } from '../src/accounts/domain/accounts.use-cases';
import { startSystem, type SystemHarness } from './system-harness';

/** A plan's caps reach the services that enforce them, through the gateway's token. */
let sys: SystemHarness;

beforeAll(async () => {
  sys = await startSystem('gw_caps');
});
afterAll(() => sys.stop());

const hook = (n: number) => ({ url: `https://example.com/hooks/${n}`, events: ['signal.new'] });

describe("a plan's webhook cap", () => {
  it("when an account's plan allows 2 subscriptions, then the third is a 409 naming 2; a plan without a cap has the default", async () => {
    const { key, accountId } = await sys.gw.account({ per_minute: 600, per_day: 10_000, max_webhooks: 2 });
    const auth = { Authorization: `Bearer ${key}` };
    await request(sys.gw.url).post('/v1/webhooks').set(auth).send(hook(1)).expect(201);
    await request(sys.gw.url).post('/v1/webhooks').set(auth).send(hook(2)).expect(201);
    const refused = await request(sys.gw.url).post('/v1/webhooks').set(auth).send(hook(3)).expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toMatch(/\b2\b/);

    // The default plan's cap (25) applies to an account whose plan sets none.
    const other = await sys.gw.account({ per_minute: 600, per_day: 10_000 });
    await request(sys.gw.url)
      .post('/v1/webhooks')
      .set({ Authorization: `Bearer ${other.key}` })
      .send(hook(3))
      .expect(201);

    expect(accountId).toMatch(/^acc_/);
  });

  it("when a dashboard session creates subscriptions, then its plan's cap applies as it does to a key", async () => {
    const signup = await request(sys.gw.url)
      .post('/v1/dashboard/signup')
      .send({ email: `caps-${Date.now()}@example.com`, password: 'a-long-enough-password' })
      .expect(201);
    const cookie = ([] as string[]).concat(signup.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const session = { Cookie: cookie, 'X-CSRF-Token': String(signup.body.data.csrf_token) };
    valueOrThrow(
      await changePlan(sys.gw.deps.accounts, String(signup.body.data.account.id), {
        per_minute: 600,
        per_day: 10_000,
        max_webhooks: 1,
      }),
    );
    await request(sys.gw.url).post('/v1/webhooks').set(session).send(hook(1)).expect(201);
    const refused = await request(sys.gw.url).post('/v1/webhooks').set(session).send(hook(2)).expect(409);
    expect(refused.body.error.message).toMatch(/\b1\b/);
  });
});
