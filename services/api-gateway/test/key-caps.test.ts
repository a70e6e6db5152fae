import request from 'supertest';
import { startGateway, type GatewayHarness } from './gateway-harness';

/** The plan's key cap counts every key that works: a rolled key in its overlap included. */
let gw: GatewayHarness;
const nowhere = 'http://127.0.0.1:9';
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  gw = await startGateway({
    label: 'gw_key_caps',
    upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
  });
});
afterAll(() => gw.stop());

async function dashboard(maxKeys: number) {
  const account = await gw.account({ per_minute: 600, per_day: 10_000, max_keys: maxKeys }, PASSWORD);
  const res = await request(gw.url)
    .post('/v1/dashboard/session')
    .send({ email: account.email, password: PASSWORD })
    .expect(200);
  const cookie = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .find((c) => c.startsWith('__Host-signal_session='))!
    .split(';')[0]!;
  const auth = { Cookie: cookie, 'X-CSRF-Token': res.body.data.csrf_token as string };
  const roll = (keyId: string, overlap: number) =>
    request(gw.url).post(`/v1/dashboard/keys/${keyId}/roll`).set(auth).send({ overlap_seconds: overlap });
  const create = (name: string) => request(gw.url).post('/v1/dashboard/keys').set(auth).send({ name });
  const active = async () =>
    (
      (await request(gw.url).get('/v1/dashboard/keys').set(auth).expect(200)).body.data as Array<{
        id: string;
        status: string;
      }>
    ).filter((k) => k.status === 'active');
  return { ...account, auth, roll, create, active };
}

describe('the key cap and rolls', () => {
  it('when the account is at its cap, then a roll with an overlap is refused (both keys would work) and one without is not', async () => {
    const d = await dashboard(2);
    await d.create('second').expect(201);
    const refused = await d.roll(d.keyId, 3600).expect(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toContain('the most its plan allows (2)');
    expect(await d.active()).toHaveLength(2);
    // The refused roll left no claim: the key can still be rolled, here without overlap.
    const replaced = await d.roll(d.keyId, 0).expect(201);
    expect(replaced.body.data.previous.status).toBe('revoked');
    expect(await d.active()).toHaveLength(2);
  });

  it('when a key is in its overlap, then it counts against the cap and cannot be rolled again', async () => {
    const d = await dashboard(3);
    const rolled = (await d.roll(d.keyId, 3600).expect(201)).body.data;
    expect(await d.active()).toHaveLength(2);
    const again = await d.roll(d.keyId, 3600).expect(409);
    expect(again.body.error.message).toContain('already being rolled out');
    await d.roll(d.keyId, 0).expect(409);
    await d.create('third').expect(201);
    const full = await d.create('fourth').expect(409);
    expect(full.body.error.message).toContain('the most its plan allows (3)');
    // Rolling one key over and over never goes past the cap.
    await d.roll(rolled.created.id as string, 3600).expect(409);
    expect(await d.active()).toHaveLength(3);
  });

  it('when a key in its overlap has its replacement revoked, then it can be rolled again, once', async () => {
    const d = await dashboard(5);
    const first = (await d.roll(d.keyId, 3600).expect(201)).body.data;
    await request(gw.url)
      .delete(`/v1/dashboard/keys/${first.created.id as string}`)
      .set(d.auth)
      .expect(200);
    const second = (await d.roll(d.keyId, 3600).expect(201)).body.data;
    expect(second.created.id).not.toBe(first.created.id);
    expect(second.previous.id).toBe(d.keyId);
    // The new replacement works, so the key is being rolled out again.
    const again = await d.roll(d.keyId, 3600).expect(409);
    expect(again.body.error.message).toContain('already being rolled out');
    expect((await d.active()).map((k) => k.id).sort()).toEqual([d.keyId, second.created.id].sort());
  });

  it('when the same key is rolled many times at once, then one roll makes a key and the others are refused', async () => {
    const d = await dashboard(20);
    const rolls = await Promise.all(Array.from({ length: 8 }, () => d.roll(d.keyId, 3600)));
    expect(rolls.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    expect(await d.active()).toHaveLength(2);
  });
});
