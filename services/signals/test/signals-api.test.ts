import {
  errorEnvelopeSchema,
  signalDetailResponseSchema,
  signalListResponseSchema,
  type SignalDetail,
} from '@signal/contracts';
import { generateKeyPairSync } from 'node:crypto';
import { signInternalToken } from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, waitFor } from '@signal/test-kit';
import request from 'supertest';
import { signalInput, startSignals, type SignalsHarness } from './signals-harness';

let svc: SignalsHarness;
const created: SignalDetail[] = [];
const DAY = 86_400_000;

beforeAll(async () => {
  svc = await startSignals('signals_api');
  // 25 signals over the last 25 days, mixed types, then a few status moves.
  const types = ['new', '3d', '7d', '30d', 'wallet', 'premium'];
  for (let i = 0; i < 25; i++) {
    const res = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send(
        signalInput({
          type: types[i % types.length],
          is_premium: i % 5 === 0,
          created_at: new Date(Date.now() - (i + 1) * DAY).toISOString(),
        }),
      )
      .expect(201);
    created.push(res.body.data);
  }
  await request(svc.url)
    .post(`/internal/signals/${created[0]!.id}/status`)
    .set(svc.ingestAuth)
    .send({ status: 'winner' })
    .expect(200);
  await request(svc.url)
    .post(`/internal/signals/${created[1]!.id}/status`)
    .set(svc.ingestAuth)
    .send({ status: 'rugged' })
    .expect(200);
  // A write reaches the list through the timeline index; on a loaded machine an index update can
  // fail and is re-applied a moment later (TimelineIndexMaintenance): wait until every write shows.
  const listed = async (query: string) =>
    signalListResponseSchema.parse((await get(`/v1/signals?${query}`).expect(200)).body).meta.total;
  await waitFor(
    async () =>
      (await listed('limit=1')) === 25 &&
      (await listed('status=winner&limit=1')) === 1 &&
      (await listed('status=rugged&limit=1')) === 1,
    60_000,
    50,
    'the 25 signals and both status moves listed',
  );
});
afterAll(() => svc.stop());

const get = (path: string) => request(svc.url).get(path).set('Authorization', `Bearer ${svc.token()}`);

describe('GET /v1/signals', () => {
  it('when called without filters, then it returns the newest 20 with exact meta and only the public fields', async () => {
    const res = await get('/v1/signals').expect(200);
    const body = signalListResponseSchema.parse(res.body);
    expect(body.data).toHaveLength(20);
    expect(body.meta).toMatchObject({ total: 25, page: 1, per_page: 20, total_pages: 2 });
    expect(body.data[0]!.id).toBe(created[0]!.id);
    const times = body.data.map((s) => Date.parse(s.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(JSON.stringify(res.body)).not.toMatch(/_id|__v|outbox|version|idem/);
  });

  it('when filtering by type and status, then only matching signals come back', async () => {
    const res = await get('/v1/signals?type=new&status=winner').expect(200);
    expect(res.body.data.map((s: SignalDetail) => s.id)).toEqual([created[0]!.id]);
    const rugged = await get('/v1/signals?status=rugged').expect(200);
    expect(rugged.body.meta.total).toBe(1);
    const byType = await get('/v1/signals?type=3d&limit=100').expect(200);
    expect(byType.body.data.every((s: SignalDetail) => s.type === '3d')).toBe(true);
    expect(byType.body.meta.total).toBe(created.filter((s) => s.type === '3d').length);
  });

  it('when a parameter comes after a thousand others, then it is read as any other: a filter after 1,000 empty pieces filters, and 1,500 unknown names are refused in a bounded message', async () => {
    const filtered = await get(`/v1/signals?${'&'.repeat(1000)}type=3d&limit=100`).expect(200);
    expect(filtered.body.meta.total).toBe(created.filter((s) => s.type === '3d').length);
    expect(filtered.body.data.every((s: SignalDetail) => s.type === '3d')).toBe(true);
    await get(`/v1/signals?${'&'.repeat(1000)}limit=abc`).expect(400);
    // A piece without a name names nothing: ignored, as an empty piece is.
    const nameless = await get(`/v1/signals?&=&=x&type=3d&limit=100`).expect(200);
    expect(nameless.body.meta.total).toBe(filtered.body.meta.total);

    const names = Array.from({ length: 1500 }, (_, i) => `p${i}=1`).join('&');
    const refused = errorEnvelopeSchema.parse((await get(`/v1/signals?${names}`).expect(400)).body);
    expect(refused.error.message).toBe(
      'unknown parameters: p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 and 1490 more',
    );
    const long = errorEnvelopeSchema.parse((await get(`/v1/signals?${'n'.repeat(3000)}=1`).expect(400)).body);
    expect(long.error.message).toBe(`unknown parameter: ${'n'.repeat(64)}…`);
    // Each unknown name is a detail of its own, and a near miss names the parameter meant.
    const near = errorEnvelopeSchema.parse((await get('/v1/signals?limt=5&foo=1').expect(400)).body);
    expect(near.error.message).toBe('unknown parameters: limt (did you mean limit?), foo');
    expect(near.error.details).toEqual([
      { field: 'limt', message: 'unknown parameter: limt (did you mean limit?)' },
      { field: 'foo', message: 'unknown parameter: foo' },
    ]);
  });

  it('when since is given, then only signals created strictly after it are listed', async () => {
    const since = created[4]!.created_at;
    const res = await get(`/v1/signals?since=${encodeURIComponent(since)}&limit=100`).expect(200);
    expect(res.body.data.map((s: SignalDetail) => s.id)).toEqual(created.slice(0, 4).map((s) => s.id));
  });

  it('when since is the same instant in another ISO 8601 form (offset without colon, basic format, microseconds), then the same signals are listed', async () => {
    const since = new Date(created[4]!.created_at);
    const ids = async (text: string) =>
      (await get(`/v1/signals?since=${encodeURIComponent(text)}&limit=100`).expect(200)).body.data.map(
        (s: SignalDetail) => s.id,
      );
    const expected = created.slice(0, 4).map((s) => s.id);
    const plus2 = new Date(since.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+0200');
    const basic = since.toISOString().replace(/[-:]/g, '');
    const micro = since.toISOString().replace('Z', '999Z');
    expect(await ids(plus2)).toEqual(expected);
    expect(await ids(basic)).toEqual(expected);
    expect(await ids(micro)).toEqual(expected);
    // An offset's `+` written unencoded in the URL arrives as a space, and is read as the `+`.
    const unencoded = new Date(since.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    const plain = (
      await get(`/v1/signals?since=${unencoded.replace('.', '%2E')}&limit=100`).expect(200)
    ).body.data.map((s: SignalDetail) => s.id);
    expect(plain).toEqual(expected);
    // A calendar date is midnight UTC: every signal of the run was created after it.
    const today = since.toISOString().slice(0, 10);
    expect(await ids(today)).toHaveLength(created.filter((s) => s.created_at.slice(0, 10) >= today).length);
  });

  it('when paging past the end, then data is empty and meta intact', async () => {
    const res = await get('/v1/signals?page=9&limit=10').expect(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta).toMatchObject({
      total: 25,
      page: 9,
      per_page: 10,
      total_pages: 3,
      next_cursor: null,
    });
  });

  it('when following next_cursor, then pages match page-based paging and report their page', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pageNo = 0;
    do {
      const res: request.Response = await get(
        `/v1/signals?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
      ).expect(200);
      pageNo += 1;
      expect(res.body.meta.page).toBe(pageNo);
      const byPage = await get(`/v1/signals?limit=7&page=${pageNo}`).expect(200);
      expect(res.body.data).toEqual(byPage.body.data);
      seen.push(...res.body.data.map((s: SignalDetail) => s.id));
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    expect(seen).toEqual(created.map((s) => s.id));
  });

  it('when a cursor from the whole list is sent with a type, then it continues after its signal within that type', async () => {
    const first = await get('/v1/signals?limit=7').expect(200);
    const cursor: string = first.body.meta.next_cursor;
    const res = await get(`/v1/signals?type=3d&limit=100&cursor=${cursor}`).expect(200);
    // The 7th signal is the cursor's position: the 3d signals older than it follow, as Stripe's
    // starting_after continues under any filter.
    const older = created.slice(7).filter((s) => s.type === '3d');
    expect(older.length).toBeGreaterThan(0);
    expect(res.body.data.map((s: SignalDetail) => s.id)).toEqual(older.map((s) => s.id));
  });

  it('when a cursor from before `since` is sent, then the page is empty and numbered at the end of the filtered list, as its page numbers count it', async () => {
    const since = encodeURIComponent(created[4]!.created_at);
    const first = await get('/v1/signals?limit=10').expect(200);
    const older: string = first.body.meta.next_cursor;
    const res = await get(`/v1/signals?since=${since}&limit=2&cursor=${older}`).expect(200);
    const afterTheLast = await get(`/v1/signals?since=${since}&limit=2&page=3`).expect(200);
    expect(res.body).toEqual({
      success: true,
      data: [],
      meta: { total: 4, page: 3, per_page: 2, total_pages: 2, next_cursor: null },
    });
    expect(res.body.meta).toEqual(afterTheLast.body.meta);
  });

  it.each([
    ['type=bogus', 'type'],
    ['status=alive', 'status'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['since=yesterday', 'since'],
    ['since=2026-11-24T06:00:00', 'since'],
    ['since=2026-02-30', 'since'],
    ['sort=asc', 'sort'],
    ['cursor=%24%24', 'cursor'],
    ['cursor=abc', 'cursor'],
    ['type=new&type=3d', 'type'],
  ])('when the query has %s, then it is a 400 VALIDATION_ERROR naming %s', async (qs, field) => {
    const res = await get(`/v1/signals?${qs}`).expect(400);
    const body = errorEnvelopeSchema.parse(res.body);
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.message).toContain(field);
    expect(body.error.request_id).toBe(res.headers['x-request-id']);
  });
});

describe('GET /v1/signals/{id}', () => {
  it('when the signal exists, then the detail shape comes back', async () => {
    const res = await get(`/v1/signals/${created[0]!.id}`).expect(200);
    const { data } = signalDetailResponseSchema.parse(res.body);
    expect(data.performance.status).toBe('winner');
    expect(data.token.socials).toEqual({
      twitter: 'https://x.com/token',
      telegram: 'https://t.me/token',
      website: null,
    });
    expect(data.metrics.mcap_ath).toBeGreaterThanOrEqual(data.metrics.mcap_current);
    expect(data.performance.roi).toBe(50);
  });

  it.each(['sig_01HZZZZZZZZZZZZZZZZZZZZZZZ', 'nope', 'sig_'])(
    'when the id is %s, then 404 NOT_FOUND',
    async (id) => {
      const res = await get(`/v1/signals/${id}`).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    },
  );

  it('when the id is 3,000 characters or holds a NUL, then the 404 message quotes at most 80 of them and no control character', async () => {
    const long = await get(`/v1/signals/${'x'.repeat(3000)}`).expect(404);
    expect(long.body.error.message).toBe(`Signal ${'x'.repeat(80)}… was not found.`);
    const nul = await get('/v1/signals/sig_%00abc').expect(404);
    expect(nul.body.error.message).toBe('Signal sig_\uFFFDabc was not found.');
    const route = await get(`/v2/${'y'.repeat(500)}`).expect(404);
    expect(route.body.error.message.length).toBeLessThan(120);
  });
});

describe('internal authentication', () => {
  it('when called directly without the gateway token, then 401 and nothing leaks', async () => {
    const res = await request(svc.url).get('/v1/signals').expect(401);
    expect(res.body).toEqual({ success: false, error: expect.objectContaining({ code: 'UNAUTHORIZED' }) });
    expect(res.body.data).toBeUndefined();
  });
  it('when the token is forged, then 401', async () => {
    const forged = signInternalToken(
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
      'signals',
      'acc_x',
    );
    await request(svc.url).get('/v1/signals').set('Authorization', `Bearer ${forged}`).expect(401);
  });
  it('when the token is for another service, then 401', async () => {
    const other = signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'stats', 'acc_x');
    await request(svc.url).get('/v1/signals').set('Authorization', `Bearer ${other}`).expect(401);
  });
  it('when ingest is called without its token, then 401', async () => {
    await request(svc.url).post('/internal/signals').send(signalInput()).expect(401);
    await request(svc.url)
      .post('/internal/signals')
      .set('Authorization', `Bearer ${svc.token()}`)
      .send(signalInput())
      .expect(401);
  });
});

describe('ingestion', () => {
  it('when a create is retried with the same Idempotency-Key, then the first signal is returned', async () => {
    const body = signalInput();
    const first = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'k-1')
      .send(body)
      .expect(201);
    const again = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'k-1')
      .send(body)
      .expect(200);
    expect(again.body.data.id).toBe(first.body.data.id);
    const conflict = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'k-1')
      .send(signalInput())
      .expect(409);
    expect(conflict.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('when concurrent creates share a key, then exactly one signal is made', async () => {
    const body = signalInput();
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        request(svc.url)
          .post('/internal/signals')
          .set(svc.ingestAuth)
          .set('Idempotency-Key', 'k-concurrent')
          .send(body),
      ),
    );
    const ids = new Set(results.map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
  });

  it('when 20 PATCHes of one signal arrive at once, then every one is applied in turn: 200 each, each value written once', async () => {
    const id = created[5]!.id;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(svc.url)
          .patch(`/internal/signals/${id}`)
          .set(svc.ingestAuth)
          .send({ metrics: { holders: 1000 + i } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    const holders = results.map((r) => r.body.data.metrics.holders as number).sort((a, b) => a - b);
    expect(holders).toEqual(Array.from({ length: 20 }, (_, i) => 1000 + i));
  });

  it('when metrics move, then roi and ath follow', async () => {
    const id = created[2]!.id;
    const res = await request(svc.url)
      .patch(`/internal/signals/${id}`)
      .set(svc.ingestAuth)
      .send({ metrics: { mcap_current: 400_000 } })
      .expect(200);
    expect(res.body.data.performance).toMatchObject({ roi: 300, ath_roi: 300 });
    expect(res.body.data.metrics.mcap_ath).toBe(400_000);
    const down = await request(svc.url)
      .patch(`/internal/signals/${id}`)
      .set(svc.ingestAuth)
      .send({ metrics: { mcap_current: 50_000 } })
      .expect(200);
    expect(down.body.data.performance).toMatchObject({ roi: -50, ath_roi: 300 });
  });

  it.each([
    ['active', 'winner', 200],
    ['winner', 'dead', 200],
    ['dead', 'active', 409],
    ['dead', 'winner', 409],
  ])('when a signal goes %s → %s, then %i', async (from, to, status) => {
    const res0 = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send(signalInput())
      .expect(201);
    const id = res0.body.data.id as string;
    const path: Record<string, string[]> = { active: [], winner: ['winner'], dead: ['dead'] };
    for (const s of path[from]!)
      await request(svc.url)
        .post(`/internal/signals/${id}/status`)
        .set(svc.ingestAuth)
        .send({ status: s })
        .expect(200);
    const res = await request(svc.url)
      .post(`/internal/signals/${id}/status`)
      .set(svc.ingestAuth)
      .send({ status: to })
      .expect(status);
    if (status === 409) expect(res.body.error.code).toBe('INVALID_STATUS_TRANSITION');
  });

  it('when the body is bad, then 400 names the field; wrong type 415; huge 413', async () => {
    const bad = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send({ ...signalInput(), type: 'moon' })
      .expect(400);
    expect(bad.body.error.message).toContain('type');
    const missing = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send({ type: 'new' })
      .expect(400);
    expect(missing.body.error.message).toContain('token');
    await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Content-Type', 'text/plain')
      .send('hello')
      .expect(415);
    const broken = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Content-Type', 'application/json')
      .send('{"a":')
      .expect(400);
    expect(broken.body.error.code).toBe('VALIDATION_ERROR');
    await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(6 * 1024 * 1024) }))
      .expect(413);
  });

  it('when backfilling in bulk, then all are stored and a retried batch returns the same ids without writing', async () => {
    const batch = Array.from({ length: 50 }, () =>
      signalInput({ created_at: new Date(Date.now() - 40 * DAY).toISOString() }),
    );
    const first = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'bulk-1')
      .send({ signals: batch })
      .expect(201);
    expect(first.body.data).toMatchObject({ created: 50, skipped: 0 });
    const again = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'bulk-1')
      .send({ signals: batch })
      .expect(200);
    expect(again.body.data).toEqual({ created: 0, skipped: 50, ids: first.body.data.ids });
    // No outbox batch is left behind: the relay would find one naming only refused signals on
    // every sweep, for good (keeping FerretDB busy and later backfills from reaching stats).
    const batches = svc.deps.mongo.collection('outbox_batches');
    await waitFor(async () => (await batches.countDocuments({})) === 0, 60_000, 100, 'no outbox batch left');
  });

  it('when a bulk Idempotency-Key is reused for another batch, then 409 IDEMPOTENCY_CONFLICT and nothing of it is stored', async () => {
    const before = await request(svc.url)
      .get('/v1/signals?limit=1')
      .set('Authorization', `Bearer ${svc.token()}`);
    await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'bulk-reused')
      .send({ signals: [signalInput(), signalInput()] })
      .expect(201);
    const reused = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .set('Idempotency-Key', 'bulk-reused')
      .send({ signals: [signalInput(), signalInput(), signalInput()] })
      .expect(409);
    expect(reused.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    const after = await request(svc.url)
      .get('/v1/signals?limit=1')
      .set('Authorization', `Bearer ${svc.token()}`);
    expect(after.body.meta.total).toBe(before.body.meta.total + 2);
  });

  it('when values pass their types but not their range (ROI overflowing, a cap of 1e308, a time before 1970, a javascript: link), then 400 naming the field and nothing stored', async () => {
    const before = await request(svc.url)
      .get('/v1/signals?limit=1')
      .set('Authorization', `Bearer ${svc.token()}`);
    const base = signalInput();
    const refused = async (body: object, field: string) => {
      const res = await request(svc.url).post('/internal/signals').set(svc.ingestAuth).send(body).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    };
    await refused(
      { ...base, metrics: { ...base.metrics, mcap_entry: 1e-300, mcap_current: 1e300 } },
      'metrics.mcap_entry',
    );
    await refused({ ...base, metrics: { ...base.metrics, mcap_current: 1e308 } }, 'metrics.mcap_current');
    await refused({ ...base, created_at: '1969-12-31T23:59:59Z' }, 'created_at');
    await refused({ ...base, created_at: '1970-01-01T00:00:00Z' }, 'created_at');
    await refused(
      { ...base, token: { ...base.token, socials: { website: 'javascript:alert(3)' } } },
      'token.socials.website',
    );
    await refused(
      { ...base, token: { ...base.token, socials: { twitter: 'data:text/html,hi' } } },
      'token.socials.twitter',
    );
    const bulk = await request(svc.url)
      .post('/internal/signals/bulk')
      .set(svc.ingestAuth)
      .send({
        signals: [
          signalInput(),
          { ...base, metrics: { ...base.metrics, mcap_current: 1e300 } },
          signalInput(),
        ],
      })
      .expect(400);
    expect(bulk.body.error.code).toBe('VALIDATION_ERROR');
    const patched = await request(svc.url)
      .patch(`/internal/signals/${created[3]!.id}`)
      .set(svc.ingestAuth)
      .send({ metrics: { mcap_current: 1e308 } })
      .expect(400);
    expect(patched.body.error.code).toBe('VALIDATION_ERROR');
    const after = await request(svc.url)
      .get('/v1/signals?limit=1')
      .set('Authorization', `Bearer ${svc.token()}`);
    expect(after.body.meta.total).toBe(before.body.meta.total);
  });
});

describe('unknown routes', () => {
  it('when the route does not exist, then 404 envelope with request id', async () => {
    const res = await request(svc.url).get('/nope').set('X-Request-Id', 'abc-123').expect(404);
    expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', request_id: 'abc-123' });
    expect(res.headers['x-request-id']).toBe('abc-123');
  });
});

describe('GET /internal/signals/export', () => {
  it('when paged with after = the previous next_after, then every signal comes once, in id order, with its version', async () => {
    const seen: Array<{ id: string; version: number }> = [];
    let after: string | null | undefined;
    for (let pages = 0; after !== null && pages < 100; pages++) {
      const res = await request(svc.url)
        .get(`/internal/signals/export?limit=10${after ? `&after=${after}` : ''}`)
        .set(svc.ingestAuth)
        .expect(200);
      seen.push(...(res.body.data as Array<{ id: string; version: number }>));
      after = res.body.meta.next_after;
      if (after !== null) expect(after).toBe(seen.at(-1)!.id);
    }
    expect(after).toBeNull();
    const ids = seen.map((s) => s.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(created.map((c) => c.id)));
    expect(seen.every((s) => Number.isInteger(s.version) && s.version >= 1)).toBe(true);
  });
});
