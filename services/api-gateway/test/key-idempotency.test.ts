import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { sendOnceOver } from '@signal/test-kit';
import { startGateway, type GatewayHarness } from './gateway-harness';

let gw: GatewayHarness;

beforeAll(async () => {
  const nowhere = 'http://127.0.0.1:9';
  gw = await startGateway({
    label: 'gw_idem',
    upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
    env: { IP_RATE_LIMIT_PER_MINUTE: '10000' },
  });
});
afterAll(async () => {
  await gw.stop();
});

async function session(): Promise<{ token: string; accountId: string }> {
  const password = 'idempotency password';
  const { email, accountId } = await gw.account(undefined, password);
  const res = await request(gw.url).post('/v1/auth/login').send({ email, password }).expect(200);
  return { token: res.body.data.token as string, accountId };
}

const createKey = (token: string, body: object, idempotencyKey?: string) => {
  const r = request(gw.url).post('/v1/account/keys').set('Authorization', `Bearer ${token}`);
  return (idempotencyKey ? r.set('Idempotency-Key', idempotencyKey) : r).send(body);
};

describe('Idempotency-Key on API key creation', () => {
  it('when a creation is retried with the same key and body, then the same key comes back (secret included), once', async () => {
    const { token } = await session();
    const idem = `retry-${randomBytes(4).toString('hex')}`;
    const first = await createKey(token, { name: 'ci' }, idem).expect(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await createKey(token, { name: 'ci' }, idem).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['cache-control']).toBe('no-store');
    expect(again.body.data).toEqual(first.body.data);
    // The key authenticates (its service is not running here: 503, where a bad key is 401).
    const used = await request(gw.url)
      .get('/v1/signals')
      .set('Authorization', `Bearer ${again.body.data.key}`);
    expect(used.body.error.code).toBe('SERVICE_UNAVAILABLE');
    const list = await request(gw.url)
      .get('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(list.body.data.filter((k: { name: string }) => k.name === 'ci')).toHaveLength(1);
  });

  it('when a creation is retried after its key was revoked, then 409 CONFLICT naming the revocation, without the secret', async () => {
    const { token } = await session();
    const idem = `revoked-${randomBytes(4).toString('hex')}`;
    const first = await createKey(token, { name: 'gone' }, idem).expect(201);
    await request(gw.url)
      .delete(`/v1/account/keys/${first.body.data.id}`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    const again = await createKey(token, { name: 'gone' }, idem).expect(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('revoked') });
    expect(JSON.stringify(again.body)).not.toContain(first.body.data.key);
  });

  it('when the same key comes with another body, then 409 IDEMPOTENCY_CONFLICT and nothing is made', async () => {
    const { token } = await session();
    const idem = `conflict-${randomBytes(4).toString('hex')}`;
    await createKey(token, { name: 'one' }, idem).expect(201);
    const res = await createKey(token, { name: 'two' }, idem).expect(409);
    expect(res.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    const list = await request(gw.url)
      .get('/v1/account/keys')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(list.body.data.map((k: { name: string }) => k.name)).not.toContain('two');
  });

  it('when ten retries race, then one key is made and every response names it', async () => {
    const { token } = await session();
    const idem = `race-${randomBytes(4).toString('hex')}`;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => sendOnceOver(() => createKey(token, { name: 'raced' }, idem))),
    );
    expect(responses.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(responses.map((a) => a.body.data.id)).size).toBe(1);
    expect(new Set(responses.map((a) => a.body.data.key)).size).toBe(1);
  });

  it('when another account uses the same Idempotency-Key, then it gets a key of its own', async () => {
    const a = await session();
    const b = await session();
    const idem = `shared-${randomBytes(4).toString('hex')}`;
    const ka = await createKey(a.token, { name: 'k' }, idem).expect(201);
    const kb = await createKey(b.token, { name: 'k' }, idem).expect(201);
    expect(kb.body.data.id).not.toBe(ka.body.data.id);
  });

  it('when the replay record is stored, then it holds the key sealed, never in clear', async () => {
    const { token, accountId } = await session();
    const idem = `sealed-${randomBytes(4).toString('hex')}`;
    const created = await createKey(token, { name: 'sealed' }, idem).expect(201);
    const record = await gw.deps.mongo
      .collection<{ _id: string }>('api_key_requests')
      .findOne({ _id: `${accountId}:${idem}` });
    expect(record).not.toBeNull();
    const stored = JSON.stringify(record);
    expect(stored).not.toContain(created.body.data.key);
    expect(stored).not.toContain(created.body.data.key.slice(8, 30));
  });

  it('when the header is not 1-255 visible ASCII characters, then 400 naming it and no key', async () => {
    const { token } = await session();
    const res = await createKey(token, { name: 'bad' }, 'x'.repeat(256)).expect(400);
    expect(res.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'Idempotency-Key' }],
    });
  });

  it('when the dashboard retries a creation, then the same rules hold there', async () => {
    const signup = await request(gw.url)
      .post('/v1/dashboard/signup')
      .send({
        email: `idem-${randomBytes(4).toString('hex')}@example.com`,
        password: 'a long enough password',
      })
      .expect(201);
    const cookie = ([] as string[]).concat(signup.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const auth = {
      Cookie: cookie,
      'X-CSRF-Token': signup.body.data.csrf_token as string,
      'Idempotency-Key': 'dash-1',
    };
    const first = await request(gw.url)
      .post('/v1/dashboard/keys')
      .set(auth)
      .send({ name: 'web' })
      .expect(201);
    const again = await request(gw.url)
      .post('/v1/dashboard/keys')
      .set(auth)
      .send({ name: 'web' })
      .expect(200);
    expect(again.body.data.key).toBe(first.body.data.key);
    await request(gw.url).post('/v1/dashboard/keys').set(auth).send({ name: 'other' }).expect(409);
  });
});
