import {
  signalIdSchema,
  webhookDataSchema,
  webhookPayloadSchema,
  webhookSubscriptionSchema,
  webhookWithSecretSchema,
} from '@signal/contracts';
import {
  startReceiver,
  testBrokerPrefix,
  waitFor,
  type ReceivedRequest,
  type Receiver,
} from '@signal/test-kit';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { signalInput, startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { MAX_PREVIOUS_SECRETS } from '../src/domain/rotate-secret.use-case';
import { PRODUCTION_POLICY, guardedLookupFor } from '../src/domain/url-guard';
import { receiverResolver } from '../src/data/receiver-resolver';
import { publishEvents } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

const broker = testBrokerPrefix('webhooks', removeBrokerPrefix);
let signals: SignalsHarness;
let hooks: WebhooksHarness;
let receiver: Receiver;
const ACC = 'acc_webhooks_a';

beforeAll(async () => {
  signals = await startSignals('wh_signals', {}, { prefix: broker.prefix });
  hooks = await startWebhooks({ label: 'wh', prefix: broker.prefix });
  receiver = await startReceiver();
});
afterAll(async () => {
  await hooks.stop();
  await signals.stop();
  await receiver.close();
  await broker.cleanup();
});

async function subscribe(body: Record<string, unknown>, account = ACC) {
  const res = await request(hooks.url).post('/v1/webhooks').set(hooks.auth(account)).send(body).expect(201);
  return res.body.data as { id: string; secret: string };
}

async function ingest(over: Record<string, unknown> = {}): Promise<string> {
  const res = await request(signals.url)
    .post('/internal/signals')
    .set(signals.ingestAuth)
    .send(signalInput(over))
    .expect(201);
  return res.body.data.id as string;
}

const forPath = (path: string) => receiver.requests.filter((r) => r.path === path);

describe('subscriptions API', () => {
  it('when a subscription is created, then 201 with the stored shape and a whsec_ secret shown only then', async () => {
    const res = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth(ACC))
      .send({ url: `${receiver.url}/crud`, events: ['signal.new', 'signal.winner'], types: ['new', '7d'] })
      .expect(201);
    const created = webhookWithSecretSchema.parse(res.body.data);
    expect(created.id).toMatch(/^wh_/);
    expect(created.secret).toMatch(/^whsec_/);
    expect(created).toMatchObject({ status: 'enabled', types: ['new', '7d'] });
    const got = await request(hooks.url).get(`/v1/webhooks/${created.id}`).set(hooks.auth(ACC)).expect(200);
    webhookSubscriptionSchema.parse(got.body.data);
    expect(JSON.stringify(got.body)).not.toContain('whsec_');
    const list = await request(hooks.url).get('/v1/webhooks').set(hooks.auth(ACC)).expect(200);
    expect(list.body.data.map((s: { id: string }) => s.id)).toContain(created.id);
    expect(JSON.stringify(list.body)).not.toContain('whsec_');

    const patched = await request(hooks.url)
      .patch(`/v1/webhooks/${created.id}`)
      .set(hooks.auth(ACC))
      .send({ types: null, enabled: false })
      .expect(200);
    expect(patched.body.data).toMatchObject({ types: null, status: 'disabled' });
    await request(hooks.url).delete(`/v1/webhooks/${created.id}`).set(hooks.auth(ACC)).expect(200);
    await request(hooks.url).get(`/v1/webhooks/${created.id}`).set(hooks.auth(ACC)).expect(404);
  });

  it('when another account asks for or changes a subscription, then 404', async () => {
    const { id } = await subscribe({ url: `${receiver.url}/mine`, events: ['signal.new'] });
    const other = hooks.auth('acc_someone_else');
    await request(hooks.url).get(`/v1/webhooks/${id}`).set(other).expect(404);
    await request(hooks.url).patch(`/v1/webhooks/${id}`).set(other).send({ enabled: false }).expect(404);
    await request(hooks.url).delete(`/v1/webhooks/${id}`).set(other).expect(404);
    await request(hooks.url).get(`/v1/webhooks/${id}/deliveries`).set(other).expect(404);
    const list = await request(hooks.url).get('/v1/webhooks').set(other).expect(200);
    expect(list.body.data).toEqual([]);
  });

  it.each([
    [{ events: ['signal.new'] }, 'url'],
    [{ url: 'not a url', events: ['signal.new'] }, 'url'],
    [{ url: 'https://example.com/h', events: [] }, 'events'],
    [{ url: 'https://example.com/h', events: ['signal.moon'] }, 'events'],
    [{ url: 'https://example.com/h', events: ['signal.new'], types: ['1y'] }, 'types'],
    [{ url: 'https://example.com/h', events: ['signal.new'], color: 'red' }, 'color'],
    [{ url: 'https://example.com:0/h', events: ['signal.new'] }, 'port must be between 1 and 65535'],
    [{ url: 'https://example.com:99999/h', events: ['signal.new'] }, 'port must be between 1 and 65535'],
    [{ url: 'https://example.com/a b', events: ['signal.new'] }, 'a space is %20'],
    [{ url: 'https://example.com/h?q={x}', events: ['signal.new'] }, 'percent-encode'],
    [{ url: 'https://example.com/a\tb', events: ['signal.new'] }, 'control characters'],
    [{ url: 'https://example.com/a#frag', events: ['signal.new'] }, '#fragment'],
    [{ url: 'https://example.com/a%zz', events: ['signal.new'] }, 'malformed percent-escape'],
    [{ url: `https://example.com/${'x'.repeat(2100)}`, events: ['signal.new'] }, 'at most 2048'],
  ])('when the body is %j, then 400 naming %s', async (body, field) => {
    const res = await request(hooks.url).post('/v1/webhooks').set(hooks.auth(ACC)).send(body).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(field);
  });

  it('when a receiver URL does not show where it would be POSTed (no // before the host, a percent-encoded host), then 400 at creation and update, and nothing is stored', async () => {
    const account = 'acc_webhooks_written_url';
    const noSlashes = `${receiver.url.replace('http://', 'http:/')}/ok`; // the parser reads http://127.0.0.1:…/ok
    const refusals: [string, string][] = [
      [noSlashes, 'url must be written as scheme://host'],
      [`${receiver.url.replace('http://', 'http:')}/ok`, 'url must be written as scheme://host'],
      [
        'https://ex%41mple.com/',
        'url host must be written as the host it names: ex%41mple.com is read as example.com',
      ],
    ];
    for (const [url, message] of refusals) {
      const res = await request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth(account))
        .send({ url, events: ['signal.new'] })
        .expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain(message);
    }
    const list = await request(hooks.url).get('/v1/webhooks').set(hooks.auth(account)).expect(200);
    expect(list.body.data).toEqual([]);

    // Written in full, in any case, with a percent-encoded path: accepted and shown as sent.
    const written = `${receiver.url.replace('http://', 'HTTP://')}/caf%C3%A9`;
    const { id } = await subscribe({ url: written, events: ['signal.new'] }, account);
    for (const [url, message] of refusals) {
      const res = await request(hooks.url)
        .patch(`/v1/webhooks/${id}`)
        .set(hooks.auth(account))
        .send({ url })
        .expect(400);
      expect(res.body.error.message).toContain(message);
    }
    const got = await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(account)).expect(200);
    expect(got.body.data.url).toBe(written);
  });

  it('when called without the gateway token, then 401', async () => {
    await request(hooks.url).get('/v1/webhooks').expect(401);
  });

  it('when subscriptions are listed with limit and page, then that page comes newest first with meta', async () => {
    // An account of its own: the totals are this test's alone.
    const account = 'acc_webhooks_pages';
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await subscribe({ url: `${receiver.url}/page${i}`, events: ['signal.new'] }, account)).id);
    }
    const newestFirst = [...ids].reverse();
    const list = (query: string) =>
      request(hooks.url).get(`/v1/webhooks${query}`).set(hooks.auth(account)).expect(200);

    const first = await list('?limit=2');
    expect(first.body.success).toBe(true);
    expect(first.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.meta).toEqual({ total: 3, page: 1, per_page: 2, total_pages: 2 });
    const second = await list('?limit=2&page=2');
    expect(second.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst.slice(2));
    expect(second.body.meta).toEqual({ total: 3, page: 2, per_page: 2, total_pages: 2 });
    for (const s of [...first.body.data, ...second.body.data]) webhookSubscriptionSchema.parse(s);
    // Without parameters (the dashboard's call) a page holds up to 100.
    const all = await list('');
    expect(all.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst);
    expect(all.body.meta).toEqual({ total: 3, page: 1, per_page: 100, total_pages: 1 });
    const beyond = await list('?page=5');
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.meta).toEqual({ total: 3, page: 5, per_page: 100, total_pages: 1 });
  });

  it.each([
    ['?cursor=abc', 'cursor'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=ten', 'limit'],
    ['?page=0', 'page'],
  ])('when subscriptions are listed with %s, then 400 naming %s', async (query, field) => {
    const res = await request(hooks.url).get(`/v1/webhooks${query}`).set(hooks.auth(ACC)).expect(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(field);
  });

  it('when a subscription is created with types null, then it is stored for every type, as when types is omitted', async () => {
    const res = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth(ACC))
      .send({ url: `${receiver.url}/null-types`, events: ['signal.new'], types: null })
      .expect(201);
    expect(webhookWithSecretSchema.parse(res.body.data).types).toBeNull();
    const got = await request(hooks.url)
      .get(`/v1/webhooks/${res.body.data.id}`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(got.body.data.types).toBeNull();
  });

  it('when a subscription as returned (description null) is sent back to create or update, then it is accepted and null clears the description', async () => {
    const created = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth(ACC))
      .send({ url: `${receiver.url}/null-description`, events: ['signal.new'], description: null })
      .expect(201);
    expect(created.body.data.description).toBeNull();
    const id = created.body.data.id as string;
    const named = await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ description: 'alerts' })
      .expect(200);
    expect(named.body.data.description).toBe('alerts');
    const cleared = await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ description: null })
      .expect(200);
    expect(cleared.body.data.description).toBeNull();
  });

  it('when a text field holds a NUL character, then 400 naming it, not a 500 from the store', async () => {
    const res = await request(hooks.url)
      .post('/v1/webhooks')
      .set(hooks.auth(ACC))
      .send({ url: `${receiver.url}/nul`, events: ['signal.new'], description: 'a\u0000b' })
      .expect(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(res.body.error.message).toMatch(/^description must not contain the NUL character/);
  });

  it('when a description or URL holds a control character or a text-direction mark, then 400 naming it at creation and update, and nothing is stored', async () => {
    const refused = [
      { url: `${receiver.url}/esc`, events: ['signal.new'], description: 'x\u001b[2Jy' },
      { url: `${receiver.url}/rlo`, events: ['signal.new'], description: 'paid\u202e' },
      { url: `${receiver.url}/\u202eh`, events: ['signal.new'] },
    ];
    for (const body of refused) {
      const res = await request(hooks.url).post('/v1/webhooks').set(hooks.auth(ACC)).send(body).expect(400);
      const field = 'description' in body ? 'description' : 'url';
      expect(res.body.error.details).toEqual([
        {
          field,
          message: `${field} must not contain control characters or text-direction marks (such as U+202E)`,
        },
      ]);
    }
    const { id } = await subscribe({
      url: `${receiver.url}/kept`,
      events: ['signal.new'],
      description: 'kept',
    });
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ description: 'a\u0007b' })
      .expect(400);
    const kept = await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC)).expect(200);
    expect(kept.body.data.description).toBe('kept');
    const all = await request(hooks.url).get('/v1/webhooks?limit=100').set(hooks.auth(ACC)).expect(200);
    expect(all.body.data.map((w: { url: string }) => w.url)).not.toContain(`${receiver.url}/esc`);
  });

  it('when a subscription is deleted with a body that is not JSON, then 400 naming the body, and it is kept', async () => {
    const { id } = await subscribe({ url: `${receiver.url}/delete-body`, events: ['signal.new'] });
    for (const [type, body] of [
      ['application/json', '{{{'],
      ['application/json', 'not gzip'],
    ] as const) {
      const req = request(hooks.url)
        .delete(`/v1/webhooks/${id}`)
        .set(hooks.auth(ACC))
        .set('Content-Type', type);
      if (body === 'not gzip') req.set('Content-Encoding', 'gzip');
      const res = await req.send(body).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC)).expect(200);
  });

  it('when the same Idempotency-Key comes with types null and then without types, then the second is a replay', async () => {
    const key = `null-types-${Date.now()}`;
    const body = { url: `${receiver.url}/null-types-replay`, events: ['signal.new'] };
    const first = await request(hooks.url)
      .post('/v1/webhooks')
      .set({ ...hooks.auth(ACC), 'Idempotency-Key': key })
      .send({ ...body, types: null })
      .expect(201);
    const again = await request(hooks.url)
      .post('/v1/webhooks')
      .set({ ...hooks.auth(ACC), 'Idempotency-Key': key })
      .send(body)
      .expect(200);
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
  });

  /** One creation request, sent again as a client's retry would: the same Idempotency-Key and body. */
  const creationWithKey = (name: string) => {
    const key = `${name}-${Date.now()}`;
    const body = { url: `${receiver.url}/${name}`, events: ['signal.new'] };
    return () =>
      request(hooks.url)
        .post('/v1/webhooks')
        .set({ ...hooks.auth(ACC), 'Idempotency-Key': key })
        .send(body);
  };

  it('when a creation is replayed after its subscription was deleted, then the replay is a 409 naming the deletion at once, not a "retry"', async () => {
    const create = creationWithKey('deleted-replay');
    const first = await create().expect(201);
    const { id } = first.body.data as { id: string };
    await request(hooks.url).delete(`/v1/webhooks/${id}`).set(hooks.auth(ACC)).expect(200);
    const replay = await create().expect(409);
    expect(replay.body.error.code).toBe('CONFLICT');
    expect(replay.body.error.message).toContain(`(${id}) has been deleted`);
    expect(replay.body.error.message).not.toContain('retry');
  });

  it('when a creation is replayed after its secret was rotated, then the replay carries the secret it was created with, and a 409 once that one no longer signs', async () => {
    const create = creationWithKey('rotated-replay');
    const first = await create().expect(201);
    const { id, secret } = first.body.data as { id: string; secret: string };
    const rotate = async () =>
      (await request(hooks.url).post(`/v1/webhooks/${id}/rotate-secret`).set(hooks.auth(ACC)).expect(200))
        .body.data.secret as string;
    const rotated = await rotate();
    const again = await create().expect(200);
    expect(again.body.data).toMatchObject({ id, secret });
    expect(again.body.data.secret).not.toBe(rotated);
    // Enough rotations that the creation secret is no longer among those that sign.
    for (let i = 0; i < MAX_PREVIOUS_SECRETS; i++) await rotate();
    const late = await create().expect(409);
    expect(late.body.error.code).toBe('CONFLICT');
    expect(late.body.error.message).toContain('rotate-secret');
    expect(JSON.stringify(late.body)).not.toContain('whsec_');
  });
});

describe('test events and the delivery log', () => {
  it('when deliveries are filtered by an event no delivery can have, then 400 listing the event names', async () => {
    const { id } = await subscribe({ url: `${receiver.url}/event-filter`, events: ['signal.new'] });
    const res = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?event=bogus`)
      .set(hooks.auth(ACC))
      .expect(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toBe(
      'event must be one of signal.new, signal.winner, signal.dead, signal.rugged, webhook.test',
    );
    // The names deliveries do carry still filter.
    const test = await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
    const tests = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?event=webhook.test`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(tests.body.data.map((d: { id: string }) => d.id)).toEqual([test.body.data.id]);
    const news = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?event=signal.new`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(news.body.data).toEqual([]);
  });

  type ListBody = {
    data: Array<{ id: string }>;
    meta: {
      total: number;
      page: number;
      per_page: number;
      total_pages: number;
      next_cursor: string | null;
      prev_cursor: string | null;
    };
  };
  /** A subscription with five test deliveries made one at a time, and its delivery list. */
  const deliveryLog = async (path: string) => {
    const { id } = await subscribe({ url: `${receiver.url}/${path}`, events: ['signal.new'] });
    const sendTest = async () =>
      (await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202)).body.data
        .id as string;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await sendTest());
    const list = async (query: string): Promise<ListBody> =>
      (
        await request(hooks.url)
          .get(`/v1/webhooks/${id}/deliveries?${query}`)
          .set(hooks.auth(ACC))
          .expect(200)
      ).body as ListBody;
    return { sendTest, made, newestFirst: [...made].reverse(), list };
  };

  it('when the delivery log is walked by cursor while deliveries are made, then each delivery comes once, in order, and the walk ends', async () => {
    const { sendTest, made, newestFirst, list } = await deliveryLog('cursor-walk');

    const first = await list('limit=2');
    expect(first.data.map((d) => d.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.meta).toMatchObject({ total: 5, page: 1, per_page: 2, total_pages: 3 });
    expect(first.meta.next_cursor).toEqual(expect.any(String));
    // Two deliveries made now would shift page 2 by two; the cursor's walk is not moved.
    made.push(await sendTest(), await sendTest());
    const second = await list(`limit=2&cursor=${first.meta.next_cursor}`);
    expect(second.data.map((d) => d.id)).toEqual(newestFirst.slice(2, 4));
    expect(second.meta).toMatchObject({ total: 7, page: 2 });
    const third = await list(`limit=2&cursor=${second.meta.next_cursor}`);
    expect(third.data.map((d) => d.id)).toEqual(newestFirst.slice(4));
    expect(third.meta).toMatchObject({ page: 3, next_cursor: null });

    // The same walk over one status: the fold of every delivery, cut at the cursor.
    await waitFor(
      async () => {
        const all = await list('status=succeeded&limit=100');
        return all.data.length === made.length ? all : undefined;
      },
      15_000,
      100,
      'every test delivery succeeded',
    );
    const walked: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: ListBody = await list(`status=succeeded&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      walked.push(...page.data.map((d) => d.id));
      expect(page.meta.page).toBe(++pages);
      cursor = page.meta.next_cursor;
    } while (cursor);
    expect(walked).toEqual([...made].reverse());
    expect(pages).toBe(3);
  });

  it('when the delivery log is walked back by prev_cursor after deliveries were made, then each page comes back with its rows, and the newer ones are a page before the first', async () => {
    const { sendTest, newestFirst, list } = await deliveryLog('cursor-back');
    const ids = (page: ListBody) => page.data.map((d) => d.id);

    const first = await list('limit=2');
    expect(first.meta.prev_cursor).toBeNull();
    const second = await list(`limit=2&cursor=${first.meta.next_cursor}`);
    const third = await list(`limit=2&cursor=${second.meta.next_cursor}`);
    expect(ids(third)).toEqual(newestFirst.slice(4));
    // Two deliveries made now would shift page numbers by two; the walk back is not moved.
    const newer = [await sendTest(), await sendTest()];
    const back2 = await list(`limit=2&cursor=${third.meta.prev_cursor}`);
    expect(ids(back2)).toEqual(newestFirst.slice(2, 4));
    expect(back2.meta.page).toBe(2);
    expect(back2.meta.next_cursor).toEqual(expect.any(String));
    const back1 = await list(`limit=2&cursor=${back2.meta.prev_cursor}`);
    expect(ids(back1)).toEqual(newestFirst.slice(0, 2));
    expect(back1.meta.page).toBe(1);
    // Forward again from the page walked back to: the same rows as the first time.
    expect(ids(await list(`limit=2&cursor=${back1.meta.next_cursor}`))).toEqual(newestFirst.slice(2, 4));
    // The deliveries made during the walk are the page before it, and nothing is before them.
    const newest = await list(`limit=2&cursor=${back1.meta.prev_cursor}`);
    expect(ids(newest)).toEqual([...newer].reverse());
    expect(newest.meta.prev_cursor).toBeNull();

    // The same walk back over one status: the fold of every delivery, cut before the cursor.
    const all = [...[...newer].reverse(), ...newestFirst];
    await waitFor(
      async () => {
        const done = await list('status=succeeded&limit=100');
        return done.data.length === all.length ? done : undefined;
      },
      15_000,
      100,
      'every test delivery succeeded',
    );
    const last = await list('status=succeeded&limit=3&page=3');
    expect(ids(last)).toEqual(all.slice(6));
    const middle = await list(`status=succeeded&limit=3&cursor=${last.meta.prev_cursor}`);
    expect(ids(middle)).toEqual(all.slice(3, 6));
    expect(middle.meta.page).toBe(2);
    const top = await list(`status=succeeded&limit=3&cursor=${middle.meta.prev_cursor}`);
    expect(ids(top)).toEqual(all.slice(0, 3));
    expect(top.meta).toMatchObject({ page: 1, prev_cursor: null });
  });

  it('when a delivery list gets a cursor it did not return, another list’s cursor, or a cursor with a page, then 400 naming cursor', async () => {
    const { id } = await subscribe({ url: `${receiver.url}/cursor-bad`, events: ['signal.new'] });
    const { id: other } = await subscribe({ url: `${receiver.url}/cursor-other`, events: ['signal.new'] });
    for (let i = 0; i < 2; i++)
      await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
    const first = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?limit=1`)
      .set(hooks.auth(ACC))
      .expect(200);
    const cursor = first.body.meta.next_cursor as string;
    const refused = [
      `${id}/deliveries?cursor=bm90LWEtY3Vyc29y`,
      `${id}/deliveries?cursor=a%2Bb`,
      `${id}/deliveries?page=2&cursor=${cursor}`,
      `${other}/deliveries?cursor=${cursor}`,
      `${id}/deliveries?event=webhook.test&cursor=${cursor}`,
    ];
    for (const path of refused) {
      const res = await request(hooks.url).get(`/v1/webhooks/${path}`).set(hooks.auth(ACC)).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain('cursor');
    }
    await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?cursor=${cursor}`)
      .set(hooks.auth(ACC))
      .expect(200);
  });

  it('when a test event is asked of a disabled subscription, then 409 CONFLICT asking to enable it, and nothing is queued', async () => {
    const { id } = await subscribe({ url: `${receiver.url}/disabled-test`, events: ['signal.new'] });
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: false })
      .expect(200);
    const refused = await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(409);
    expect(refused.body.success).toBe(false);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toMatch(/disabled.*Enable it before sending a test event/);
    const log = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(log.body.meta.total).toBe(0);

    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: true })
      .expect(200);
    await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
    await waitFor(() => forPath('/disabled-test').length === 1, 10_000, 50, 'the test event once enabled');
    // The test event's data has the shape every event's data has (id, token, metrics,
    // type, is_premium), marked as a test and naming its subscription.
    const payload = webhookPayloadSchema.parse(JSON.parse(forPath('/disabled-test')[0]!.body));
    expect(payload.event).toBe('webhook.test');
    expect(webhookDataSchema.parse(payload.data)).toMatchObject({ type: 'new', is_premium: false });
    expect(signalIdSchema.safeParse(payload.data.id).success).toBe(true);
    expect(payload.data).toMatchObject({ test: true, subscription_id: id });
  });

  it('when recover is given cursor null (the next_cursor of its last page passed back), then it is taken as no cursor: 202, and the failed delivery is attempted', async () => {
    // An account of its own: recover is limited per account per minute.
    const account = 'acc_webhooks_recover_null';
    let status = 500;
    const failing = await startReceiver(() => ({ status }));
    try {
      const { id } = await subscribe({ url: `${failing.url}/recover-null`, events: ['signal.new'] }, account);
      const since = new Date(Date.now() - 1000).toISOString();
      await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(account)).expect(202);
      await waitFor(
        async () => {
          const r = await request(hooks.url)
            .get(`/v1/webhooks/${id}/deliveries?status=failed`)
            .set(hooks.auth(account));
          return r.body.data?.length === 1;
        },
        15_000,
        100,
        'the test event failed after its retries',
      );
      const attempted = failing.requests.length;
      status = 200;
      const recover = (cursor: string | null) =>
        request(hooks.url)
          .post(`/v1/webhooks/${id}/recover`)
          .set(hooks.auth(account))
          .send({ since, cursor });

      const first = await recover(null).expect(202);
      expect(first.body.data).toEqual({ since, queued: 1, next_cursor: null });
      await waitFor(() => failing.requests.length === attempted + 1, 10_000, 50, 'the recovered attempt');
      // The last page's next_cursor, passed straight back, is accepted too.
      const again = await recover(first.body.data.next_cursor).expect(202);
      expect(again.body.data).toEqual({ since, queued: 0, next_cursor: null });
    } finally {
      await failing.close();
    }
  });
});

describe('delivery', () => {
  it('when a signal is ingested, then the subscriber receives signal.new signed per Standard Webhooks', async () => {
    const { secret } = await subscribe({ url: `${receiver.url}/e2e`, events: ['signal.new'] });
    const signalId = await ingest({ type: 'premium', is_premium: true });
    const [req] = await waitFor<ReceivedRequest[] | undefined>(
      () => {
        const got = forPath('/e2e').filter((r) => JSON.parse(r.body).data.id === signalId);
        return got.length ? got : undefined;
      },
      10_000,
      50,
      'the delivery',
    );
    const verified = new Webhook(secret).verify(req!.body, {
      'webhook-id': req!.headers['webhook-id'] as string,
      'webhook-timestamp': req!.headers['webhook-timestamp'] as string,
      'webhook-signature': req!.headers['webhook-signature'] as string,
    }) as { event: string; data: Record<string, unknown> };
    expect(verified.event).toBe('signal.new');
    expect(Object.keys(verified.data).sort()).toEqual(['id', 'is_premium', 'metrics', 'token', 'type']);
    expect(verified.data).toMatchObject({ id: signalId, type: 'premium', is_premium: true });
    expect(() =>
      new Webhook('whsec_' + Buffer.from('wrong-secret-wrong-secret').toString('base64')).verify(
        req!.body,
        req!.headers as Record<string, string>,
      ),
    ).toThrow();
  });

  it('when types restrict the subscription, then only those signal types are delivered', async () => {
    await subscribe({
      url: `${receiver.url}/typed`,
      events: ['signal.new', 'signal.winner'],
      types: ['wallet'],
    });
    const skipped = await ingest({ type: '3d' });
    const wanted = await ingest({ type: 'wallet' });
    await request(signals.url)
      .post(`/internal/signals/${wanted}/status`)
      .set(signals.ingestAuth)
      .send({ status: 'winner' })
      .expect(200);
    await waitFor(() => forPath('/typed').length >= 2, 10_000, 50, 'two typed deliveries');
    await new Promise((r) => setTimeout(r, 300));
    const got = forPath('/typed').map(
      (r) => JSON.parse(r.body) as { event: string; data: { id: string; performance?: { status: string } } },
    );
    expect(got.map((g) => g.data.id)).not.toContain(skipped);
    expect(got.map((g) => g.event).sort()).toEqual(['signal.new', 'signal.winner']);
    expect(got.find((g) => g.event === 'signal.winner')!.data.performance!.status).toBe('winner');
  });

  it('when the receiver responds 500, then exactly 4 attempts with one webhook-id, the delivery is failed, and a re-send delivers it', async () => {
    let mode = 500;
    const failing = await startReceiver(() => ({ status: mode }));
    try {
      const { id } = await subscribe({ url: `${failing.url}/fail`, events: ['signal.new'] });
      await ingest();
      const list = await waitFor(
        async () => {
          const r = await request(hooks.url)
            .get(`/v1/webhooks/${id}/deliveries?status=failed`)
            .set(hooks.auth(ACC));
          return r.body.data?.length ? r.body.data : undefined;
        },
        15_000,
        100,
        'a failed delivery',
      );
      expect(failing.requests).toHaveLength(4);
      expect(new Set(failing.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
      const detail = await request(hooks.url)
        .get(`/v1/webhooks/${id}/deliveries/${list[0].id}`)
        .set(hooks.auth(ACC))
        .expect(200);
      expect(
        detail.body.data.attempts.map((a: { attempt: number; status_code: number }) => [
          a.attempt,
          a.status_code,
        ]),
      ).toEqual([
        [1, 500],
        [2, 500],
        [3, 500],
        [4, 500],
      ]);
      const gaps = failing.requests.slice(1).map((r, i) => r.receivedAt - failing.requests[i]!.receivedAt);
      expect(gaps[0]).toBeGreaterThanOrEqual(150);

      mode = 200;
      await request(hooks.url)
        .post(`/v1/webhooks/${id}/deliveries/${list[0].id}/retry`)
        .set(hooks.auth(ACC))
        .expect(202);
      await waitFor(
        async () => {
          const r = await request(hooks.url)
            .get(`/v1/webhooks/${id}/deliveries/${list[0].id}`)
            .set(hooks.auth(ACC));
          return r.body.data.status === 'succeeded';
        },
        10_000,
        100,
        'the re-sent delivery',
      );
      expect(failing.requests).toHaveLength(5);
      expect(failing.requests[4]!.headers['webhook-id']).toBe(failing.requests[0]!.headers['webhook-id']);
      await request(hooks.url)
        .post(`/v1/webhooks/${id}/deliveries/${list[0].id}/retry`)
        .set(hooks.auth(ACC))
        .expect(409);
    } finally {
      await failing.close();
    }
  });

  it('when the receiver responds after the delivery timeout, then the attempt counts as a timeout failure', async () => {
    // A timeout of 300 ms set here: the receiver's response comes long after it.
    const slow = await startReceiver(() => ({ status: 200, delayMs: 5000 }));
    const slowBroker = testBrokerPrefix('wh_slow', removeBrokerPrefix);
    const quick = await startWebhooks({
      label: 'wh_slow',
      prefix: slowBroker.prefix,
      worker: true,
      env: { WEBHOOK_RETRY_DELAYS_MS: '60000', WEBHOOK_TIMEOUT_MS: '300' },
    });
    try {
      const res = await request(quick.url)
        .post('/v1/webhooks')
        .set(quick.auth(ACC))
        .send({ url: `${slow.url}/slow`, events: ['signal.new'] })
        .expect(201);
      await request(quick.url).post(`/v1/webhooks/${res.body.data.id}/test`).set(quick.auth(ACC)).expect(202);
      const attempt = await waitFor(
        async () => {
          const r = await request(quick.url)
            .get(`/v1/webhooks/${res.body.data.id}/deliveries`)
            .set(quick.auth(ACC));
          const d = r.body.data[0];
          if (!d || d.attempts_made < 1) return undefined;
          return (
            await request(quick.url)
              .get(`/v1/webhooks/${res.body.data.id}/deliveries/${d.id}`)
              .set(quick.auth(ACC))
          ).body.data;
        },
        12_000,
        200,
        'the first attempt',
      );
      expect(attempt.attempts[0]).toMatchObject({ status_code: null, error: 'timeout' });
      expect(attempt.attempts[0].duration_ms).toBeGreaterThanOrEqual(290);
      expect(attempt.status).toBe('pending');
    } finally {
      await quick.stop();
      await slow.close();
      await slowBroker.cleanup();
    }
  }, 180_000);

  it('when a failed delivery is re-sent right after its webhook is enabled again, then the worker does not decide on its older, disabled copy: it is sent', async () => {
    const heldBroker = testBrokerPrefix('wh_held', removeBrokerPrefix);
    // The worker holds subscriptions for a minute here: only the job's stamp can make it look again.
    const held = await startWebhooks({
      label: 'wh_held',
      prefix: heldBroker.prefix,
      env: { WEBHOOK_SUBSCRIPTION_CACHE_MS: '60000' },
    });
    try {
      const created = await request(held.url)
        .post('/v1/webhooks')
        .set(held.auth(ACC))
        .send({ url: `${receiver.url}/re-enabled`, events: ['signal.new'] })
        .expect(201);
      const id = created.body.data.id as string;
      await request(held.url)
        .patch(`/v1/webhooks/${id}`)
        .set(held.auth(ACC))
        .send({ enabled: false })
        .expect(200);
      await publishEvents(heldBroker.prefix, 1);
      const failed = await waitFor(
        async () => {
          const r = await request(held.url).get(`/v1/webhooks/${id}/deliveries`).set(held.auth(ACC));
          return r.body.data?.[0]?.status === 'failed' ? (r.body.data[0].id as string) : undefined;
        },
        10_000,
        100,
        'the delivery kept as failed while disabled',
      );

      await request(held.url)
        .patch(`/v1/webhooks/${id}`)
        .set(held.auth(ACC))
        .send({ enabled: true })
        .expect(200);
      await request(held.url)
        .post(`/v1/webhooks/${id}/deliveries/${failed}/retry`)
        .set(held.auth(ACC))
        .expect(202);

      await waitFor(() => forPath('/re-enabled').length === 1, 10_000, 50, 'the re-sent delivery');
      expect(forPath('/re-enabled')[0]!.headers['webhook-id']).toBe(failed);
      const detail = await waitFor(
        async () => {
          const r = await request(held.url)
            .get(`/v1/webhooks/${id}/deliveries/${failed}`)
            .set(held.auth(ACC));
          return r.body.data.status === 'succeeded' ? r.body.data : undefined;
        },
        10_000,
        100,
        'the delivery recorded as succeeded',
      );
      expect(detail.attempts).toEqual([expect.objectContaining({ status_code: 200, error: null })]);
    } finally {
      await held.stop();
      await heldBroker.cleanup();
    }
  }, 180_000);

  it('when the receiver responds 410 Gone, then the subscription is disabled and later events are kept as failed, saying why', async () => {
    const gone = await startReceiver(() => ({ status: 410 }));
    try {
      const { id } = await subscribe({ url: `${gone.url}/gone`, events: ['signal.new'] });
      await ingest();
      await waitFor(
        async () =>
          (await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC))).body.data.status ===
          'disabled',
        10_000,
        100,
        'disabled',
      );
      const disabled = await request(hooks.url).get(`/v1/webhooks/${id}`).set(hooks.auth(ACC));
      expect(disabled.body.data.disabled_reason).toBe('The endpoint responded 410 Gone.');
      await ingest();
      const deliveries = await waitFor(
        async () => {
          const r = await request(hooks.url).get(`/v1/webhooks/${id}/deliveries`).set(hooks.auth(ACC));
          return r.body.data.length === 2 ? r.body.data : undefined;
        },
        10_000,
        100,
        'two deliveries',
      );
      expect(deliveries.map((d: { status: string }) => d.status)).toEqual(['failed', 'failed']);
      // The later one says why it was not sent; the first, what its attempt got.
      expect(
        deliveries.map((d: { last_error: string | null; attempts_made: number }) => [
          d.last_error,
          d.attempts_made,
        ]),
      ).toEqual([
        ['subscription_disabled', 0],
        ['http_410', 1],
      ]);
      expect(gone.requests).toHaveLength(1);
    } finally {
      await gone.close();
    }
  });

  /**
   * Sends a test event to subscription `id` and waits for its POST to `path`: its body, its
   * signature header, and whether a secret verifies it.
   */
  async function testSignedTo(id: string, path: string) {
    await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
    const [req] = await waitFor(
      () => (forPath(path).length ? forPath(path) : undefined),
      10_000,
      50,
      'test event',
    );
    const headers = {
      'webhook-id': req!.headers['webhook-id'] as string,
      'webhook-timestamp': req!.headers['webhook-timestamp'] as string,
      'webhook-signature': req!.headers['webhook-signature'] as string,
    };
    const verifies = (secret: string) => {
      try {
        new Webhook(secret).verify(req!.body, headers);
        return true;
      } catch {
        return false;
      }
    };
    return { body: req!.body, signature: headers['webhook-signature'], verifies };
  }

  it('when the secret is rotated, then both secrets verify during the overlap', async () => {
    const { id, secret: oldSecret } = await subscribe({
      url: `${receiver.url}/rotate`,
      events: ['signal.new'],
    });
    const rotated = await request(hooks.url)
      .post(`/v1/webhooks/${id}/rotate-secret`)
      .set(hooks.auth(ACC))
      .expect(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).not.toBe(oldSecret);
    const delivered = await testSignedTo(id, '/rotate');
    expect(JSON.parse(delivered.body).event).toBe('webhook.test');
    expect([newSecret, oldSecret].map(delivered.verifies)).toEqual([true, true]);
  });

  it('when the secret is rotated six times in its overlap, then deliveries carry the current and four earlier signatures, and the oldest secrets stop signing', async () => {
    const { id, secret: first } = await subscribe({
      url: `${receiver.url}/rotate-many`,
      events: ['signal.new'],
    });
    const secrets = [first];
    for (let i = 0; i < 6; i++) {
      const rotated = await request(hooks.url)
        .post(`/v1/webhooks/${id}/rotate-secret`)
        .set(hooks.auth(ACC))
        .expect(200);
      secrets.push(rotated.body.data.secret as string);
    }
    const delivered = await testSignedTo(id, '/rotate-many');
    expect(delivered.signature.split(' ')).toHaveLength(5);
    // secrets[6] is current; 5..2 are the four kept; 1 and 0 stopped at the fifth and sixth rotation.
    expect(secrets.map(delivered.verifies)).toEqual([false, false, true, true, true, true, true]);
  });

  it('when the secret is rotated five times at once, then every secret a rotation returned signs the next delivery', async () => {
    const { id, secret: first } = await subscribe({
      url: `${receiver.url}/rotate-at-once`,
      events: ['signal.new'],
    });
    const rotations = await Promise.all(
      Array.from({ length: 5 }, () =>
        request(hooks.url).post(`/v1/webhooks/${id}/rotate-secret`).set(hooks.auth(ACC)).expect(200),
      ),
    );
    const returned = rotations.map((r) => r.body.data.secret as string);
    expect(new Set(returned).size).toBe(5);
    const delivered = await testSignedTo(id, '/rotate-at-once');
    // Five rotations: the newest and four kept; the creation's secret is the sixth, stopped.
    expect(returned.map(delivered.verifies)).toEqual([true, true, true, true, true]);
    expect(delivered.verifies(first)).toBe(false);
  });
});

describe('URL safety', () => {
  it('when private URLs are not allowed, then http and private addresses are refused at creation', async () => {
    const strictBroker = testBrokerPrefix('wh_strict', removeBrokerPrefix);
    const strict = await startWebhooks({
      label: 'wh_strict',
      prefix: strictBroker.prefix,
      worker: false,
      env: { WEBHOOK_ALLOW_LOOPBACK_URLS: 'false' },
    });
    try {
      for (const url of [
        'http://example.com/h',
        'https://10.1.2.3/h',
        'https://127.0.0.1/h',
        'https://[::1]/h',
        'https://localhost/h',
        'https://169.254.169.254/latest',
        // Names no receiver can have: a label DNS cannot hold, an underscore no certificate names.
        `https://${'a'.repeat(64)}.example.com/h`,
        'https://my_hooks.example.com/h',
      ]) {
        const res = await request(strict.url)
          .post('/v1/webhooks')
          .set(strict.auth(ACC))
          .send({ url, events: ['signal.new'] })
          .expect(400);
        expect(res.body.error.message).toMatch(/url/);
      }
      await request(strict.url)
        .post('/v1/webhooks')
        .set(strict.auth(ACC))
        .send({ url: 'https://hooks.example.com/h', events: ['signal.new'] })
        .expect(201);
    } finally {
      await strict.stop();
      await strictBroker.cleanup();
    }
  });

  it('when a hostname resolves to a private address at connect time, then the connection is refused', async () => {
    const { lookup } = receiverResolver({
      servers: [],
      timeoutMs: 1000,
    });
    const err = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      guardedLookupFor(PRODUCTION_POLICY, lookup)('localhost', {}, (e) => resolve(e)),
    );
    expect(err?.code).toBe('EBLOCKEDADDRESS');
  });
});
