import * as contracts from '@signal/contracts';
import {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  RateLimitError,
  SignalClient,
  SignalConnectionError,
  SignalTimeoutError,
  ValidationError,
  WebhookVerificationError,
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  ServerError,
  type ApiKey,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryAttemptRequest,
  type DeliveryAttemptResponse,
  type DeliveryDetail,
  type RecoverWebhookResult,
  type RetryEvent,
  type Session,
  type SignalDetail,
  type SignalListItem,
  type Statistics,
  type WebhookSubscription,
} from '@signal/sdk';
import { waitFor } from '@signal/test-kit';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { z } from 'zod';
import { signalInput } from '../../../services/signals/test/signals-harness';
import { startSystem, type SystemHarness } from '../../../services/api-gateway/test/system-harness';

// Compile-time check: what the services return (contracts) is assignable to what the SDK promises.
type Assignable<A, B> = [A] extends [B] ? true : false;
const typeChecks: [
  Assignable<z.output<typeof contracts.signalListItemSchema>, SignalListItem>,
  Assignable<z.output<typeof contracts.signalDetailSchema>, SignalDetail>,
  Assignable<z.output<typeof contracts.statisticsSchema>, Statistics>,
  Assignable<z.output<typeof contracts.webhookSubscriptionSchema>, WebhookSubscription>,
  Assignable<z.output<typeof contracts.deliverySchema>, Delivery>,
  Assignable<z.output<typeof contracts.deliveryDetailSchema>, DeliveryDetail>,
  Assignable<z.output<typeof contracts.apiKeySchema>, ApiKey>,
  Assignable<z.output<typeof contracts.sessionSchema>, Session>,
] = [true, true, true, true, true, true, true, true];

describe('@signal/sdk against the running system', () => {
  let sys: SystemHarness;
  let client: SignalClient;
  let ids: string[] = [];

  beforeAll(async () => {
    sys = await startSystem('sdk');
    const { key } = await sys.gw.account({ per_minute: 1000, per_day: 10_000 });
    client = new SignalClient({ baseUrl: sys.gw.url, apiKey: key });
    ids = [];
    for (let i = 0; i < 5; i += 1) {
      const r = await request(sys.signals.url)
        .post('/internal/signals')
        .set(sys.signals.ingestAuth)
        .send(signalInput({ type: 'wallet' }))
        .expect(201);
      ids.push(r.body.data.id as string);
    }
  });
  afterAll(async () => {
    await sys.stop();
  });

  it('when /openapi.json lists its operations, then every operationId has an SDK method', async () => {
    const doc = (await request(sys.gw.url).get('/openapi.json').expect(200)).body as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const byOperationId: Record<string, unknown> = {
      listSignals: client.signals.list,
      getSignal: client.signals.get,
      getStats: client.stats.get,
      createWebhook: client.webhooks.create,
      listWebhooks: client.webhooks.list,
      getWebhook: client.webhooks.get,
      updateWebhook: client.webhooks.update,
      deleteWebhook: client.webhooks.delete,
      rotateWebhookSecret: client.webhooks.rotateSecret,
      sendWebhookTest: client.webhooks.sendTest,
      recoverWebhook: client.webhooks.recover,
      streamSignals: client.signals.stream,
      listWebhookDeliveries: client.webhooks.deliveries.list,
      getWebhookDelivery: client.webhooks.deliveries.get,
      retryWebhookDelivery: client.webhooks.deliveries.retry,
      login: client.auth.login,
      logout: client.auth.logout,
      changePassword: client.account.changePassword,
      listApiKeys: client.account.listKeys,
      createApiKey: client.account.createKey,
      rollApiKey: client.account.rollKey,
      renameApiKey: client.account.renameKey,
      revokeApiKey: client.account.revokeKey,
    };
    const documented = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    expect(documented.sort()).toEqual(Object.keys(byOperationId).sort());
    expect(Object.values(byOperationId).every((fn) => typeof fn === 'function')).toBe(true);
  });

  it('when the contracts change shape, then the SDK types stop compiling', () => {
    expect(typeChecks.every(Boolean)).toBe(true);
  });

  it('when a client iterates signals with a small page size, then it follows the cursor through every page, newest first', async () => {
    const seen: string[] = [];
    for await (const s of client.signals.iterate({ type: 'wallet', limit: 2 })) seen.push(s.id);
    expect(seen).toEqual([...ids].reverse());
    const page = await client.signals.list({ type: 'wallet', limit: 2, page: 3 });
    expect(page.data.map((s) => s.id)).toEqual([ids[0]]);
    expect(page.meta).toMatchObject({ total: 5, page: 3, per_page: 2, total_pages: 3 });
  });

  it('when a client fetches one signal and stats, then it gets the typed detail and statistics', async () => {
    const one = await client.signals.get(ids[0]!);
    expect(one.id).toBe(ids[0]);
    expect(typeof one.token.dex_paid).toBe('boolean');
    const stats = await client.stats.get({ period: 'all' });
    expect(Object.keys(stats.by_type).sort()).toEqual(['30d', '3d', '7d', 'new', 'premium', 'wallet']);
  });

  it('when the API returns an error, then the SDK throws the class of its code with the request id', async () => {
    const err = await client.signals.get('sig_unknown').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    expect((err as NotFoundError).requestId).toMatch(/.+/);
    // An id that names no resource is refused before a request is made (its URL would name the
    // list, or the webhook a delivery belongs to).
    for (const id of ['', '.', '..', 'stream']) {
      await expect(client.signals.get(id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.webhooks.get(id)).rejects.toMatchObject({ code: 'NOT_FOUND', status: 404 });
      await expect(client.webhooks.deliveries.get('wh_x', id)).rejects.toBeInstanceOf(NotFoundError);
    }
    const bad = await client.signals.list({ limit: 1000 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    const anon = new SignalClient({ baseUrl: sys.gw.url, apiKey: 'sk_live_nope' });
    await expect(anon.signals.list()).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    await expect(anon.signals.list()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it('when a client manages a webhook, then create, update, test, deliveries, retry, rotate and delete work and the delivery verifies', async () => {
    const created = await client.webhooks.create({
      url: `${sys.receiver.url}/sdk`,
      events: ['signal.new'],
      types: ['premium'],
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.webhooks.list()).map((w) => w.id)).toContain(created.id);
    const updated = await client.webhooks.update(created.id, { description: 'sdk test', types: null });
    expect(updated).toMatchObject({ description: 'sdk test', types: null });

    const test = await client.webhooks.sendTest(created.id);
    await waitFor(() => sys.receiver.requests.some((r) => r.path === '/sdk'), 10_000, 50, 'test delivery');
    const received = sys.receiver.requests.find((r) => r.path === '/sdk')!;
    const payload = verifyWebhook(received.body, received.headers, created.secret);
    expect(payload.event).toBe('webhook.test');
    expect(() =>
      verifyWebhook(
        received.body,
        received.headers,
        'whsec_' + Buffer.from('x'.repeat(32)).toString('base64'),
      ),
    ).toThrow(WebhookVerificationError);
    // signWebhook makes what the service sent for the same id and time, so a handler tested with it
    // meets production's headers.
    const header = (name: string): string => String(received.headers[name]);
    expect(
      signWebhook(received.body, created.secret, {
        id: header('webhook-id'),
        timestamp: Number(header('webhook-timestamp')),
      }),
    ).toEqual({
      'webhook-id': header('webhook-id'),
      'webhook-timestamp': header('webhook-timestamp'),
      'webhook-signature': header('webhook-signature'),
    });

    await waitFor(
      async () => (await client.webhooks.deliveries.get(created.id, test.id)).status === 'succeeded',
      10_000,
      100,
      'delivery succeeded',
    );
    const delivery = await client.webhooks.deliveries.get(created.id, test.id);
    expect(delivery.attempts?.[0]).toMatchObject({ attempt: 1, status_code: 200 });
    const all: Delivery[] = [];
    for await (const d of client.webhooks.deliveries.iterate(created.id, { limit: 1 })) all.push(d);
    // Other tests of this file ingest signals, which this subscription (every type) also gets.
    expect(all.filter((d) => d.event === 'webhook.test').map((d) => d.id)).toEqual([test.id]);
    expect(new Set(all.map((d) => d.id)).size).toBe(all.length);
    // A succeeded delivery is not attempted again: a typed conflict.
    await expect(client.webhooks.deliveries.retry(created.id, test.id)).rejects.toBeInstanceOf(ConflictError);

    const rotated = await client.webhooks.rotateSecret(created.id);
    expect(rotated.secret).not.toBe(created.secret);
    await client.webhooks.delete(created.id);
    await expect(client.webhooks.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('when a client lists webhooks with page and limit, then it gets that page; with no arguments or only request options, the first page as before', async () => {
    const { key } = await sys.gw.account({ per_minute: 1000, per_day: 10_000 });
    const own = new SignalClient({ baseUrl: sys.gw.url, apiKey: key });
    const older = await own.webhooks.create({
      url: `${sys.receiver.url}/sdk-list-1`,
      events: ['signal.new'],
    });
    const newer = await own.webhooks.create({
      url: `${sys.receiver.url}/sdk-list-2`,
      events: ['signal.new'],
    });
    const ids = (list: WebhookSubscription[]) => list.map((w) => w.id);
    expect(ids(await own.webhooks.list({ limit: 1 }))).toEqual([newer.id]);
    expect(ids(await own.webhooks.list({ limit: 1, page: 2 }))).toEqual([older.id]);
    expect(ids(await own.webhooks.list())).toEqual([newer.id, older.id]);
    expect(ids(await own.webhooks.list({ timeoutMs: 5000 }))).toEqual([newer.id, older.id]);
    const all: string[] = [];
    for await (const w of own.webhooks.iterate({ limit: 1 })) all.push(w.id);
    expect(all).toEqual([newer.id, older.id]);
    const second = await own.webhooks.listPage({ limit: 1, page: 2 });
    expect(ids(second.data)).toEqual([older.id]);
    expect(second.meta).toEqual({ total: 2, page: 2, per_page: 1, total_pages: 2 });
    await expect(own.webhooks.list({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it('when the rate limit is hit and its Retry-After is longer than maxRetryWait, then RateLimitError is thrown at once, without a silent wait', async () => {
    // The day's one request: its Retry-After runs to the end of the day, far beyond the budget.
    const { key } = await sys.gw.account({ per_minute: 100, per_day: 1 });
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    const retries: RetryEvent[] = [];
    const limited = new SignalClient({
      baseUrl: sys.gw.url,
      apiKey: key,
      fetch: counting,
      onRetry: (e) => retries.push(e),
    });
    await limited.stats.get();
    calls = 0;
    const err = await limited.stats.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    // Beyond the default budget of 5 s: not waited at all.
    expect(err instanceof RateLimitError && err.retryAfter).toBeGreaterThan(5);
    expect(calls).toBe(1);
    expect(retries).toEqual([]);
    expect(limited.retryDelayMs(1, 60)).toBeUndefined();
  });

  it('when nothing listens at the base URL, then the connection error names the URL and the reason', async () => {
    // A port just freed: connections to it are refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const c = new SignalClient({ baseUrl, apiKey: 'sk_live_unused', maxRetries: 0 });
    const err: unknown = await c.signals.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SignalConnectionError);
    expect(err).toHaveProperty('message', `GET /v1/signals: cannot reach ${baseUrl} (ECONNREFUSED)`);
    // A port fetch refuses itself (the Fetch standard's bad ports) fails with no system code.
    const badPort = new SignalClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'sk_live_unused',
      maxRetries: 0,
    });
    const refused: unknown = await badPort.signals.list().catch((e: unknown) => e);
    expect(refused).toHaveProperty('message', 'GET /v1/signals: cannot reach http://127.0.0.1:9 (bad port)');
    // The live stream says the same when it gives up (and on each reconnect, as `signal listen` prints).
    const reasons: string[] = [];
    const stream = new SignalClient({
      baseUrl,
      apiKey: 'sk_live_unused',
    }).signals.stream({}, { maxReconnects: 1, maxBackoffMs: 10 });
    const gaveUp: unknown = await (async () => {
      for await (const event of stream) reasons.push(event.event);
    })().catch((e: unknown) => e);
    expect(gaveUp).toHaveProperty(
      'message',
      `GET /v1/signals/stream: cannot reach ${baseUrl} (ECONNREFUSED); no data after 2 reconnects`,
    );
    expect(reasons).toEqual([]);
  });

  /** A fetch whose first POST to `path` reaches the server but whose response is lost (a dropped connection). */
  function losingFirstResponse(path: string, sent: string[]): typeof fetch {
    let lost = false;
    return async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method !== 'POST' || new URL(String(input)).pathname !== path) return res;
      sent.push(new Headers(init.headers).get('idempotency-key') ?? '(none)');
      if (lost) return res;
      lost = true;
      await res.text();
      throw new TypeError('fetch failed');
    };
  }

  it('when the response to webhooks.create is lost, then the SDK sends it again with the same Idempotency-Key and gets the one webhook made', async () => {
    const { key } = await sys.gw.account({ per_minute: 1000, per_day: 10_000 });
    const sent: string[] = [];
    const c = new SignalClient({
      baseUrl: sys.gw.url,
      apiKey: key,
      retryBaseDelayMs: 10,
      fetch: losingFirstResponse('/v1/webhooks', sent),
    });
    const url = `${sys.receiver.url}/sdk-lost-response`;
    const made = await c.webhooks.create({ url, events: ['signal.new'] });
    expect(made.secret).toMatch(/^whsec_/);
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]).toBe(sent[0]);
    const listed = await request(sys.gw.url)
      .get('/v1/webhooks')
      .set('Authorization', `Bearer ${key}`)
      .expect(200);
    const same = (listed.body.data as WebhookSubscription[]).filter((w) => w.url === url);
    expect(same.map((w) => w.id)).toEqual([made.id]);
  });

  it('when the response to account.createKey is lost, then the SDK sends it again with the same Idempotency-Key and gets the one key made', async () => {
    const acc = await sys.gw.account(undefined, 'sdk-lost-response');
    const sent: string[] = [];
    const dash = new SignalClient({
      baseUrl: sys.gw.url,
      retryBaseDelayMs: 10,
      fetch: losingFirstResponse('/v1/account/keys', sent),
    });
    await dash.auth.login(acc.email, 'sdk-lost-response');
    const created = await dash.account.createKey({ name: 'lost response' });
    expect(sent).toHaveLength(2);
    expect(sent[1]).toBe(sent[0]);
    expect(
      (await dash.account.listKeys()).filter((k) => k.name === 'lost response').map((k) => k.id),
    ).toEqual([created.id]);
    await new SignalClient({ baseUrl: sys.gw.url, apiKey: created.key }).stats.get();
  });

  it('when a client recovers a subscription and sends a typed test event, then recover returns the queued count and the sample arrives in that event’s shape', async () => {
    const hook = await client.webhooks.create({
      url: `${sys.receiver.url}/sdk-typed`,
      events: ['signal.new'],
    });
    const queued = await client.webhooks.sendTest(hook.id, { event: 'signal.rugged' });
    expect(queued.event).toBe('signal.rugged');
    await waitFor(() => sys.receiver.requests.some((r) => r.path === '/sdk-typed'), 10_000, 50, 'typed test');
    const received = sys.receiver.requests.find((r) => r.path === '/sdk-typed')!;
    const payload = verifyWebhook(received.body, received.headers, hook.secret);
    expect(payload.event === 'signal.rugged' && payload.data.performance.status).toBeTruthy();
    await waitFor(
      async () => (await client.webhooks.deliveries.get(hook.id, queued.id)).attempts.length > 0,
      10_000,
      100,
      'an attempt',
    );
    const detail = await client.webhooks.deliveries.get(hook.id, queued.id);
    const attempt: DeliveryAttempt = detail.attempts[0]!;
    const sent: DeliveryAttemptRequest | null = attempt.request;
    const response: DeliveryAttemptResponse | null = attempt.response;
    expect([sent?.body, response?.status]).toEqual([received.body, 200]);
    const since = new Date(Date.now() - 60_000);
    const recovered: RecoverWebhookResult = await client.webhooks.recover(hook.id, since);
    expect(recovered).toEqual({ since: since.toISOString(), queued: 0, next_cursor: null });
    await client.webhooks.update(hook.id, { enabled: false });
    await expect(client.webhooks.recover(hook.id, since)).rejects.toBeInstanceOf(ConflictError);
    await expect(client.webhooks.sendTest(hook.id, { timeoutMs: 5000 })).rejects.toBeInstanceOf(
      ConflictError,
    );
    await client.webhooks.delete(hook.id);
  });

  it('when a client recovers page by page with limit and cursor, then each delivery waiting for a retry is queued once and the walk ends', async () => {
    // Nothing listens on port 9: every attempt fails and waits for its retry.
    const hook = await client.webhooks.create({
      url: 'http://127.0.0.1:9/sdk-recover-pages',
      events: ['signal.new'],
    });
    const since = new Date(Date.now() - 60_000);
    const tests = [];
    for (let i = 0; i < 3; i++) tests.push(await client.webhooks.sendTest(hook.id));
    for (const t of tests)
      await waitFor(
        async () => (await client.webhooks.deliveries.get(hook.id, t.id)).attempts.length > 0,
        10_000,
        100,
        'a failed attempt',
      );
    let queued = 0;
    let calls: number;
    let page = await client.webhooks.recover(hook.id, since, { limit: 1 });
    for (calls = 1; ; calls++) {
      queued += page.queued;
      if (!page.next_cursor || calls === 10) break;
      page = await client.webhooks.recover(hook.id, since, { cursor: page.next_cursor, limit: 1 });
    }
    expect(page.next_cursor).toBeNull();
    expect(queued).toBe(3);
    expect(calls).toBeGreaterThanOrEqual(3);
    await client.webhooks.delete(hook.id);
  });

  it('when the stream’s connection drops while signals are published, then the SDK resumes through the gateway with Last-Event-ID: none lost, none twice', async () => {
    const ingest = async () =>
      (
        await request(sys.signals.url)
          .post('/internal/signals')
          .set(sys.signals.ingestAuth)
          .send(signalInput({ type: 'premium', is_premium: true }))
          .expect(201)
      ).body.data.id as string;
    const opened: (string | undefined)[] = [];
    let cutDone = false;
    // The first connection breaks after its first event: a dropped network the client must survive.
    const cuttingFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes('/v1/signals/stream')) return res;
      opened.push(new Headers(init?.headers).get('last-event-id') ?? undefined);
      if (cutDone || !res.body) return res;
      cutDone = true;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (/^event: signal\.new\n[^]*?\n\n/m.test(text)) {
            await reader.cancel();
            controller.error(new TypeError('network dropped'));
            return;
          }
          const { done, value } = await reader.read();
          if (done) return controller.close();
          text += decoder.decode(value, { stream: true });
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const published: string[] = [];
    const streaming = new SignalClient({
      baseUrl: sys.gw.url,
      apiKey: (await sys.gw.account({ per_minute: 1000, per_day: 10_000 })).key,
      fetch: cuttingFetch,
      // While the client waits to reconnect, two more signals are published.
      onRetry: () => {
        if (published.length === 1)
          void Promise.all([ingest(), ingest()]).then((two) => published.push(...two));
      },
    });
    const stream = streaming.signals.stream({ type: 'premium', events: ['signal.new'] });
    const seen: string[] = [];
    const first = waitFor(() => opened.length > 0, 10_000, 20, 'the stream opened').then(async () =>
      published.push(await ingest()),
    );
    for await (const e of stream) {
      if (e.event === 'reset') throw new Error(`unexpected reset: ${e.data.message}`);
      seen.push(e.data.data.id);
      if (seen.length === 3) published.push(await ingest());
      if (seen.length === 4) break;
    }
    await first;
    // Two published at once may enter the log in either order; each arrives exactly once.
    expect([...seen].sort()).toEqual([...published].sort());
    expect([seen[0], seen[3]]).toEqual([published[0], published[3]]);
    expect(new Set(seen).size).toBe(4);
    expect(opened).toHaveLength(2);
    expect(opened[0]).toBeUndefined();
    expect(opened[1]).toMatch(/^\d+-\d+$/);
  }, 180_000);

  it("when the account's open streams are at its plan's cap, then the next SDK stream stops with RateLimitError naming the limit", async () => {
    const { key } = await sys.gw.account({ per_minute: 1000, per_day: 10_000, max_streams: 1 });
    const holder = new SignalClient({ baseUrl: sys.gw.url, apiKey: key });
    const controller = new AbortController();
    const held = holder.signals.stream({}, { signal: controller.signal });
    const holding = (async () => {
      for await (const e of held) void e;
    })();
    try {
      await waitFor(() => held.retryMs !== undefined, 10_000, 20, 'the first stream open');
      const second = new SignalClient({ baseUrl: sys.gw.url, apiKey: key, maxRetries: 0 });
      const err = await (async () => {
        for await (const e of second.signals.stream()) void e;
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err).toMatchObject({
        status: 429,
        code: 'RATE_LIMIT_EXCEEDED',
        message: expect.stringContaining('the most its plan allows (1)'),
      });
    } finally {
      controller.abort();
      await holding;
    }
  });

  it('when the key of an open stream is revoked, then the SDK’s iterator stops with AuthenticationError', async () => {
    const acc = await sys.gw.account(undefined, 'sdk-stream-password');
    const dash = new SignalClient({ baseUrl: sys.gw.url });
    await dash.auth.login(acc.email, 'sdk-stream-password');
    const created = await dash.account.createKey({ name: 'sdk stream' });
    const streaming = new SignalClient({ baseUrl: sys.gw.url, apiKey: created.key });
    const stream = streaming.signals.stream();
    const ended = (async () => {
      for await (const e of stream) void e;
    })().catch((e: unknown) => e);
    await waitFor(() => stream.connections > 0, 10_000, 20, 'the stream opened');
    // Revoked once the gateway holds the stream open (a heartbeat or the retry hint came through).
    await waitFor(() => stream.retryMs !== undefined, 10_000, 20, 'the stream’s first bytes');
    await dash.account.revokeKey(created.id);
    const err = await ended;
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('when a dashboard session manages keys through the SDK, then the new key works and its revocation takes effect at once', async () => {
    const acc = await sys.gw.account(undefined, 'sdk-password');
    const dash = new SignalClient({ baseUrl: sys.gw.url });
    await dash.auth.login(acc.email, 'sdk-password');
    const created = await dash.account.createKey({ name: 'sdk' });
    expect((await dash.account.listKeys()).map((k) => k.id)).toContain(created.id);
    // The paged forms: the meta of a page, and every key walked page by page.
    const second = await dash.account.createKey({ name: 'sdk 2' });
    const all = (await dash.account.listKeys({ limit: 100 })).map((k) => k.id);
    expect(all).toEqual(expect.arrayContaining([created.id, second.id]));
    const page = await dash.account.listKeysPage({ limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.meta).toMatchObject({ page: 1, total: all.length, total_pages: all.length });
    const walked: string[] = [];
    for await (const k of dash.account.iterateKeys({ limit: 1 })) walked.push(k.id);
    expect(walked.sort()).toEqual([...all].sort());
    const api = new SignalClient({ baseUrl: sys.gw.url, apiKey: created.key, maxRetries: 0 });
    await api.stats.get();
    // A rename changes the name only: the same key keeps working.
    const renamed = await dash.account.renameKey(created.id, { name: 'sdk (renamed)' });
    expect(renamed).toMatchObject({ id: created.id, name: 'sdk (renamed)', status: 'active' });
    expect((await dash.account.listKeys({ limit: 100 })).find((k) => k.id === created.id)?.name).toBe(
      'sdk (renamed)',
    );
    await api.stats.get();
    // A roll with an hour's overlap: both keys work; the old one says what replaced it.
    const rolled = await dash.account.rollKey(second.id, { overlap_seconds: 3600 });
    expect(rolled.previous).toMatchObject({
      id: second.id,
      replaced_by: rolled.created.id,
      status: 'active',
    });
    expect(rolled.previous.expires_at).not.toBeNull();
    await new SignalClient({ baseUrl: sys.gw.url, apiKey: second.key, maxRetries: 0 }).stats.get();
    await new SignalClient({ baseUrl: sys.gw.url, apiKey: rolled.created.key, maxRetries: 0 }).stats.get();
    await expect(dash.account.rollKey(second.id, { overlap_seconds: 0 })).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await dash.account.revokeKey(created.id);
    await expect(api.stats.get()).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });
});

describe('@signal/sdk transport', () => {
  let server: Server;
  let url: string;
  const seen: { method: string; key: string | undefined }[] = [];
  let mode: 'flaky' | 'hang' | 'stall-body' | 'error-once' | 'unavailable' | 'too-large' = 'flaky';
  let errored = false;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const key = req.headers['idempotency-key'];
      seen.push({ method: req.method ?? '', key: typeof key === 'string' ? key : undefined });
      if (mode === 'hang') return; // never responds
      if (mode === 'stall-body') {
        // The head, then a body that never ends.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"success":');
        return;
      }
      if (mode === 'too-large') {
        res.writeHead(413, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            success: false,
            error: { code: 'PAYLOAD_TOO_LARGE', message: 'The body is over 64 KB.', request_id: 'r4' },
          }),
        );
        return;
      }
      if (mode === 'unavailable') {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(
          JSON.stringify({
            success: false,
            error: { code: 'SERVICE_UNAVAILABLE', message: 'down', request_id: 'r3', retry_after: 1 },
          }),
        );
        return;
      }
      if (mode === 'error-once' && !errored) {
        errored = true;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            success: false,
            error: { code: 'INTERNAL_ERROR', message: 'boom', request_id: 'r2' },
          }),
        );
        return;
      }
      if (mode === 'flaky' && seen.length % 2 === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(
          JSON.stringify({
            success: false,
            error: { code: 'SERVICE_UNAVAILABLE', message: 'down', request_id: 'r1' },
          }),
        );
        return;
      }
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, data: { id: 'wh_1', secret: 'whsec_x' } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** A client of the test server that gives up on a request after 200 ms, `maxRetries` times over. */
  const quickClient = (maxRetries: number, options: { idempotencyKeys?: boolean } = {}) =>
    new SignalClient({
      baseUrl: url,
      apiKey: 'k',
      timeoutMs: 200,
      maxRetries,
      retryBaseDelayMs: 10,
      ...options,
    });

  it('when a handler is tested with signWebhook and a generated secret, then verifyWebhook accepts it under either secret of a rotation and refuses another', () => {
    const [secret, old] = [generateWebhookSecret(), generateWebhookSecret()];
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(secret).not.toBe(old);
    const body = JSON.stringify({ event: 'webhook.test', timestamp: new Date().toISOString(), data: {} });
    const headers = signWebhook(body, [secret, old]);
    expect(headers['webhook-id']).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(verifyWebhook(body, headers, secret).event).toBe('webhook.test');
    expect(verifyWebhook(Buffer.from(body), signWebhook(body, old), [secret, old]).event).toBe(
      'webhook.test',
    );
    expect(() => verifyWebhook(body, headers, generateWebhookSecret())).toThrow(WebhookVerificationError);
    const stale = signWebhook(body, secret, { timestamp: new Date(Date.parse('2020-01-01T00:00:00Z')) });
    expect(stale['webhook-timestamp']).toBe('1577836800');
    expect(() => verifyWebhook(body, stale, secret)).toThrow('outside the tolerance');
  });

  it('when a POST meets a 503, then it is retried with the same Idempotency-Key', async () => {
    const c = new SignalClient({ baseUrl: url, apiKey: 'k' });
    const made = await c.webhooks.create({ url: 'https://example.com/h', events: ['signal.new'] });
    expect(made.id).toBe('wh_1');
    expect(seen).toHaveLength(2);
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it('when the server does not respond, then the SDK gives up after its timeout with SignalTimeoutError', async () => {
    mode = 'hang';
    const c = quickClient(1);
    await expect(c.stats.get()).rejects.toBeInstanceOf(SignalTimeoutError);
  });

  it('when the head comes but the body stalls, then it is a SignalTimeoutError too, after the retries', async () => {
    mode = 'stall-body';
    const c = quickClient(1);
    const before = seen.length;
    await expect(c.stats.get()).rejects.toBeInstanceOf(SignalTimeoutError);
    expect(seen.length - before).toBe(2);
  });

  it('when a POST the server does not deduplicate gets no response, then it is not repeated (it may have happened)', async () => {
    mode = 'hang';
    const c = quickClient(3);
    let before = seen.length;
    await expect(c.auth.login('a@example.com', 'pw')).rejects.toBeInstanceOf(SignalTimeoutError);
    expect(seen.length - before).toBe(1);
    // A create without its Idempotency-Key cannot be told from a new one: not repeated either.
    const keyless = quickClient(3, { idempotencyKeys: false });
    before = seen.length;
    await expect(
      keyless.webhooks.create({ url: 'https://example.com/h', events: ['signal.new'] }),
    ).rejects.toBeInstanceOf(SignalTimeoutError);
    expect(seen.length - before).toBe(1);
  });

  it('when webhooks.create gets no response, then it is sent again with the same Idempotency-Key until the retries run out', async () => {
    mode = 'hang';
    const c = quickClient(2);
    const before = seen.length;
    await expect(
      c.webhooks.create({ url: 'https://example.com/h', events: ['signal.new'] }),
    ).rejects.toBeInstanceOf(SignalTimeoutError);
    const attempts = seen.slice(before);
    expect(attempts.map((a) => a.method)).toEqual(['POST', 'POST', 'POST']);
    expect(new Set(attempts.map((a) => a.key)).size).toBe(1);
    expect(attempts[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('when webhooks.create or a webhook action meets a 500, then it is retried with the same Idempotency-Key; a POST the server does not deduplicate is not', async () => {
    mode = 'error-once';
    const c = new SignalClient({ baseUrl: url, apiKey: 'k', retryBaseDelayMs: 10 });
    const deduplicated = [
      () => c.webhooks.create({ url: 'https://example.com/h', events: ['signal.new'] }),
      () => c.webhooks.rotateSecret('wh_1'),
      () => c.webhooks.sendTest('wh_1'),
      () => c.webhooks.recover('wh_1', '2026-01-01T00:00:00Z'),
      () => c.webhooks.deliveries.retry('wh_1', 'dlv_1'),
    ];
    for (const call of deduplicated) {
      errored = false;
      const before = seen.length;
      await call();
      const attempts = seen.slice(before);
      expect(attempts).toHaveLength(2);
      expect(attempts[1]!.key).toBe(attempts[0]!.key);
    }

    errored = false;
    const loggingIn = seen.length;
    await expect(c.auth.login('a@example.com', 'pw')).rejects.toMatchObject({ status: 500 });
    expect(seen.length - loggingIn).toBe(1);
  });

  it('when a request is refused with 413, then it is not sent again (the same body would be refused again), the deduplicated creates included', async () => {
    mode = 'too-large';
    const retries: RetryEvent[] = [];
    const c = new SignalClient({
      baseUrl: url,
      apiKey: 'k',
      retryBaseDelayMs: 10,
      onRetry: (e) => retries.push(e),
    });
    const before = seen.length;
    await expect(
      c.webhooks.create({
        url: 'https://example.com/h',
        events: ['signal.new'],
        description: 'x'.repeat(70_000),
      }),
    ).rejects.toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', requestId: 'r4' });
    await expect(c.webhooks.sendTest('wh_1')).rejects.toMatchObject({ status: 413 });
    expect(seen.slice(before).map((a) => a.method)).toEqual(['POST', 'POST']);
    expect(retries).toEqual([]);
  });

  it('when a 503 asks to retry, then onRetry is told of the wait before it and the call goes on', async () => {
    mode = 'flaky';
    const retries: RetryEvent[] = [];
    const c = new SignalClient({ baseUrl: url, apiKey: 'k', onRetry: (e) => retries.push(e) });
    const before = seen.length;
    // The server responds to every other request with 503 Retry-After: 0.
    if (before % 2 === 1) await c.stats.get().catch(() => undefined);
    await c.webhooks.rotateSecret('wh_1');
    expect(
      retries.map(({ method, path, attempt, delayMs, status }) => ({
        method,
        path,
        attempt,
        delayMs,
        status,
      })),
    ).toEqual([
      { method: 'POST', path: '/v1/webhooks/wh_1/rotate-secret', attempt: 1, delayMs: 0, status: 503 },
    ]);
    expect(retries[0]!.error).toBeInstanceOf(ServerError);
  });

  it('when the waits a call would need pass maxRetryWait, then it stops waiting and throws the last error', async () => {
    mode = 'unavailable';
    const retries: RetryEvent[] = [];
    const c = new SignalClient({
      baseUrl: url,
      apiKey: 'k',
      maxRetries: 5,
      maxRetryWait: 1500,
      onRetry: (e) => retries.push(e),
    });
    const before = seen.length;
    await expect(c.stats.get()).rejects.toMatchObject({
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: 1,
    });
    // One wait of 1 s fits the budget of 1.5 s, a second would not: two requests, one wait.
    expect(seen.length - before).toBe(2);
    expect(retries.map((r) => [r.attempt, r.delayMs])).toEqual([[1, 1000]]);
    mode = 'flaky';
  });
});
