import {
  deliveryDetailSchema,
  recoverWebhookResultSchema,
  webhookDataSchema,
  webhookPayloadSchema,
} from '@signal/contracts';
import { startRawReceiver, startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';
import { webhookCollections } from '../src/data/webhook.models';
import { deliveryIdFor } from '../src/domain/delivery-state';

const ACC = 'acc_debugging';

interface Attempt {
  attempt: number;
  status_code: number | null;
  error: string | null;
  request: { url: string; headers: Record<string, string>; body: string } | null;
  response: {
    status: number;
    headers: Record<string, string>;
    headers_truncated: boolean;
    body: string;
    body_truncated: boolean;
  } | null;
}

async function subscribe(hooks: WebhooksHarness, url: string, account = ACC, fields: object = {}) {
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(account))
    .send({ url, events: ['signal.new'], ...fields })
    .expect(201);
  return res.body.data as { id: string; secret: string };
}

async function sendTest(
  hooks: WebhooksHarness,
  id: string,
  body: Record<string, unknown> = {},
  account = ACC,
) {
  const res = await request(hooks.url)
    .post(`/v1/webhooks/${id}/test`)
    .set(hooks.auth(account))
    .send(body)
    .expect(202);
  return res.body.data.id as string;
}

const detailOf = async (hooks: WebhooksHarness, id: string, deliveryId: string) =>
  deliveryDetailSchema.parse(
    (
      await request(hooks.url)
        .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
        .set(hooks.auth(ACC))
        .expect(200)
    ).body.data,
  );

/** The delivery once its first attempt is recorded (`what` names the wait in a timeout). */
const firstAttempt = (hooks: WebhooksHarness, id: string, deliveryId: string, what: string, ms = 15_000) =>
  waitFor(
    async () => {
      const d = await detailOf(hooks, id, deliveryId);
      return d.attempts?.length ? d : undefined;
    },
    ms,
    50,
    what,
  );

describe('attempt detail', () => {
  const broker = testBrokerPrefix('wh_debug', removeBrokerPrefix);
  let hooks: WebhooksHarness;
  let receiver: Receiver;
  beforeAll(async () => {
    // One retry, a minute later: the delivery stays pending with its next attempt in view.
    hooks = await startWebhooks({
      label: 'wh_debug',
      prefix: broker.prefix,
      env: { WEBHOOK_RETRY_DELAYS_MS: '60000' },
    });
    receiver = await startReceiver(() => ({
      status: 500,
      headers: {
        'x-receiver-trace': 'abc-123',
        'content-type': 'application/json',
        'x-long-value': 'v'.repeat(1500),
      },
      body: `{"error":"${'x'.repeat(5000)}"}`,
    }));
  });
  afterAll(async () => {
    await hooks.stop();
    await receiver.close();
    await broker.cleanup();
  });

  it('when an attempt fails with a response, then the delivery shows the request sent (URL, headers, body) and the response (status, headers, first 4 KB of the body), and its next attempt time', async () => {
    const { id, secret } = await subscribe(hooks, `${receiver.url}/detail?x=1`);
    const deliveryId = await sendTest(hooks, id);
    const detail = await firstAttempt(hooks, id, deliveryId, 'the first attempt');
    const received = receiver.requests[0]!;
    const attempt = detail.attempts![0] as Attempt;
    expect(detail.status).toBe('pending');
    // The one retry is set a minute (±20 %) after the attempt.
    expect(
      Date.parse(detail.next_attempt_at!) - Date.parse(detail.attempts![0]!.started_at),
    ).toBeGreaterThanOrEqual(48_000);
    expect(attempt.request).toEqual({
      url: `${receiver.url}/detail?x=1`,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'SignalService-Webhooks/1.0',
        'webhook-id': received.headers['webhook-id'],
        'webhook-timestamp': received.headers['webhook-timestamp'],
        'webhook-signature': received.headers['webhook-signature'],
      },
      body: received.body,
    });
    const secretText = secret.replace(/^whsec_/, '');
    expect(JSON.stringify(detail)).not.toContain(secretText);
    expect(attempt.response?.status).toBe(500);
    expect(attempt.response?.headers['x-receiver-trace']).toBe('abc-123');
    expect(attempt.response?.headers['x-long-value']).toBe('v'.repeat(1024));
    expect(attempt.response?.headers_truncated).toBe(true);
    expect(attempt.response?.body).toBe(`{"error":"${'x'.repeat(4096 - 10)}`);
    expect(attempt.response?.body_truncated).toBe(true);
    expect(attempt).toMatchObject({ status_code: 500, error: 'http_500' });
  });

  it('when an attempt gets no response, then its request is shown and its response is null', async () => {
    const { id } = await subscribe(hooks, 'http://127.0.0.1:1/refused');
    const deliveryId = await sendTest(hooks, id);
    const detail = await firstAttempt(hooks, id, deliveryId, 'the first attempt');
    const attempt = detail.attempts![0] as Attempt;
    expect(attempt.error).toBe('connection_refused');
    expect(attempt.request?.url).toBe('http://127.0.0.1:1/refused');
    expect(attempt.response).toBeNull();
  });

  it('when a receiver answers 2xx with a head larger than 16 KB, then the delivery succeeds with one POST and its headers cut; past 256 KB the attempt says the head was too large', async () => {
    const big = await startReceiver(() => ({
      status: 200,
      headers: { 'x-huge': 'h'.repeat(20_000), 'x-after': 'kept' },
      body: 'ok',
    }));
    const huge = await startReceiver(() => ({
      status: 200,
      headers: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`x-h${i}`, 'h'.repeat(2_000)])),
      body: 'ok',
    }));
    try {
      const { id } = await subscribe(hooks, `${big.url}/big-head`);
      const deliveryId = await sendTest(hooks, id);
      const detail = await waitFor(
        async () => {
          const d = await detailOf(hooks, id, deliveryId);
          return d.status === 'succeeded' ? d : undefined;
        },
        15_000,
        50,
        'the delivery to succeed',
      );
      expect(big.requests).toHaveLength(1);
      const attempt = detail.attempts![0] as Attempt;
      expect(attempt).toMatchObject({ status_code: 200, error: null });
      expect(attempt.response?.headers['x-huge']).toBe('h'.repeat(1024));
      expect(attempt.response?.headers['x-after']).toBe('kept');
      expect(attempt.response?.headers_truncated).toBe(true);

      const tooLarge = await subscribe(hooks, `${huge.url}/huge-head`);
      const tooLargeId = await sendTest(hooks, tooLarge.id);
      const refused = await firstAttempt(hooks, tooLarge.id, tooLargeId, 'the attempt with a head too large');
      expect(refused.attempts![0]).toMatchObject({ status_code: null, error: 'response_head_too_large' });
    } finally {
      await big.close();
      await huge.close();
    }
  });

  it('when a receiver answers headers named after what every object has, or one name twice, then the attempt shows each as sent', async () => {
    const odd = await startRawReceiver((socket) =>
      socket.write(
        'HTTP/1.1 200 OK\r\n__proto__: polluted\r\nConstructor: x\r\nContent-Type: text/plain\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok',
      ),
    );
    try {
      const { id } = await subscribe(hooks, `${odd.url}/proto`);
      const deliveryId = await sendTest(hooks, id);
      await firstAttempt(hooks, id, deliveryId, 'the attempt with odd header names');
      // Read as a client reads it: the contract's parse would drop a __proto__ key itself.
      const raw = await request(hooks.url)
        .get(`/v1/webhooks/${id}/deliveries/${deliveryId}`)
        .set(hooks.auth(ACC))
        .expect(200);
      const headers: Record<string, string> = JSON.parse(raw.text).data.attempts[0].response.headers;
      expect(Object.entries(headers)).toEqual([
        ['__proto__', 'polluted'],
        ['constructor', 'x'],
        ['content-type', 'text/plain, text/html'],
        ['content-length', '2'],
      ]);
    } finally {
      await odd.close();
    }
  });

  it('when a receiver answers 100 Continue before its 200, then the delivery succeeds with one POST; a 1xx and nothing more is a timeout, a 101 an invalid_response', async () => {
    const interim = await startRawReceiver((socket) =>
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'),
    );
    const silent = await startRawReceiver((socket) => socket.write('HTTP/1.1 102 Processing\r\n\r\n'));
    // A 101 nobody asked for, then a 200 on what would be another protocol: no answer to a POST.
    const upgrading = await startRawReceiver((socket) =>
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
      ),
    );
    try {
      const { id } = await subscribe(hooks, `${interim.url}/continue`);
      const deliveryId = await sendTest(hooks, id);
      const detail = await firstAttempt(hooks, id, deliveryId, 'the attempt after a 100 Continue');
      expect(detail.status).toBe('succeeded');
      expect(detail.attempts![0]).toMatchObject({ status_code: 200, error: null, response: { body: 'ok' } });
      expect(interim.requests).toHaveLength(1);

      const quiet = await subscribe(hooks, `${silent.url}/processing`);
      const quietId = await sendTest(hooks, quiet.id);
      const waited = await firstAttempt(hooks, quiet.id, quietId, 'the attempt after a lone 102', 30_000);
      expect(waited.attempts![0]).toMatchObject({ status_code: null, error: 'timeout' });

      const upgraded = await subscribe(hooks, `${upgrading.url}/upgrade`);
      const upgradedId = await sendTest(hooks, upgraded.id);
      const refused = await firstAttempt(hooks, upgraded.id, upgradedId, 'the attempt after a 101');
      expect(refused.attempts![0]).toMatchObject({ status_code: null, error: 'invalid_response' });
    } finally {
      await interim.close();
      await silent.close();
      await upgrading.close();
    }
  });

  it('when a receiver answers 200 and its body does not end (still arriving at the timeout, or cut), then the attempt fails and shows the status, headers and what arrived of the body', async () => {
    const head = 'HTTP/1.1 200 OK\r\nX-Receiver: slow\r\nContent-Length: 100\r\n\r\nreceived';
    const slow = await startRawReceiver((socket) => socket.write(head));
    const cut = await startRawReceiver((socket) => socket.end(head));
    try {
      const late = await subscribe(hooks, `${slow.url}/slow-body`);
      const reset = await subscribe(hooks, `${cut.url}/cut-body`);
      const [lateId, resetId] = await Promise.all([sendTest(hooks, late.id), sendTest(hooks, reset.id)]);
      const [lateDetail, resetDetail] = await Promise.all([
        firstAttempt(hooks, late.id, lateId, 'the attempt whose body was still arriving', 30_000),
        firstAttempt(hooks, reset.id, resetId, 'the attempt whose body was cut'),
      ]);
      for (const [detail, error] of [
        [lateDetail, 'timeout'],
        [resetDetail, 'connection_reset'],
      ] as const) {
        // Failed, so retried (a minute later here), and the log says what the receiver sent.
        expect(detail).toMatchObject({ status: 'pending', last_response_status: 200, last_error: error });
        expect(detail.attempts![0]).toMatchObject({
          status_code: 200,
          error,
          response: {
            status: 200,
            headers: { 'x-receiver': 'slow', 'content-length': '100' },
            body: 'received',
            body_truncated: true,
          },
        });
      }
    } finally {
      await slow.close();
      await cut.close();
    }
  });

  it('when a receiver streams 100 Continue without end, then the attempt is a response_head_too_large at once; a few interim responses are read past', async () => {
    // The flood: what a receiver can send at line rate, which node:http would parse until the
    // attempt's timeout, the worker's one thread busy with it.
    const flooding = await startRawReceiver((socket) => {
      const block = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n'.repeat(1000));
      const pump = () => {
        while (!socket.destroyed && socket.write(block));
        if (!socket.destroyed) socket.once('drain', pump);
      };
      pump();
    });
    const hinting = await startRawReceiver((socket) =>
      socket.write(
        'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n'.repeat(3) +
          'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
      ),
    );
    try {
      const { id } = await subscribe(hooks, `${flooding.url}/flood`);
      const deliveryId = await sendTest(hooks, id);
      const flooded = await firstAttempt(hooks, id, deliveryId, 'the attempt against the flood');
      expect(flooded.attempts![0]).toMatchObject({
        status_code: null,
        error: 'response_head_too_large',
        response: null,
      });
      expect(flooding.requests).toHaveLength(1);

      const hinted = await subscribe(hooks, `${hinting.url}/hints`);
      const hintedId = await sendTest(hooks, hinted.id);
      const detail = await firstAttempt(
        hooks,
        hinted.id,
        hintedId,
        'the attempt after four interim responses',
      );
      expect(detail.attempts![0]).toMatchObject({ status_code: 200, error: null, response: { body: 'ok' } });
    } finally {
      await flooding.close();
      await hinting.close();
    }
  });

  it('when a status line has a control byte in its reason phrase or a code outside 100–599, then the attempt is an invalid_response with no response', async () => {
    const lines = [
      'HTTP/1.1 200 O\x00K',
      'HTTP/1.1 200 \x1b[31mRED',
      'HTTP/1.1 999 Nine',
      'HTTP/1.1 000 Zero',
    ];
    const receivers = await Promise.all(
      lines.map((line) =>
        startRawReceiver((socket) => socket.write(`${line}\r\nContent-Length: 2\r\n\r\nok`, 'latin1')),
      ),
    );
    try {
      for (const [i, receiver] of receivers.entries()) {
        const { id } = await subscribe(hooks, `${receiver.url}/status-line-${i}`);
        const deliveryId = await sendTest(hooks, id);
        const detail = await firstAttempt(
          hooks,
          id,
          deliveryId,
          `the attempt answered ${JSON.stringify(lines[i])}`,
        );
        expect({ line: lines[i], attempt: detail.attempts![0] }).toMatchObject({
          line: lines[i],
          attempt: { status_code: null, error: 'invalid_response', response: null },
        });
      }
    } finally {
      await Promise.all(receivers.map((r) => r.close()));
    }
  });

  it('when a receiver closes each kept-alive connection after one answer without saying so, then every delivery succeeds at its first attempt', async () => {
    // Each connection answers its first request and is reset by the second, as a connection the
    // receiver closed while a request was on its way is.
    const oneShot = await startRawReceiver((socket, _request, nth) => {
      if (nth === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      else socket.resetAndDestroy();
    });
    try {
      const { id } = await subscribe(hooks, `${oneShot.url}/one-shot`);
      for (let i = 0; i < 4; i++) {
        const deliveryId = await sendTest(hooks, id);
        const detail = await firstAttempt(hooks, id, deliveryId, 'the first attempt');
        expect({ i, status: detail.status, attempts: detail.attempts!.length }).toEqual({
          i,
          status: 'succeeded',
          attempts: 1,
        });
      }
      // The later deliveries did meet a closed connection first (the receiver reset it).
      expect(oneShot.requests.filter((r) => r.nth > 0).length).toBeGreaterThan(0);
      expect(oneShot.requests.filter((r) => r.nth === 0)).toHaveLength(4);
    } finally {
      await oneShot.close();
    }
  });

  it('when every kept-alive connection to a receiver was closed by it, then a delivery goes again on a new connection and succeeds at its first attempt', async () => {
    // Each connection answers its first request (after a pause, so that three deliveries at once
    // open three) and resets the next: three idle connections, all closed, wait in the pool.
    const closing = await startRawReceiver((socket, _request, nth) => {
      if (nth === 0) setTimeout(() => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'), 300);
      else socket.resetAndDestroy();
    });
    try {
      const { id } = await subscribe(hooks, `${closing.url}/closing`);
      const first = await Promise.all([0, 1, 2].map(() => sendTest(hooks, id)));
      for (const deliveryId of first)
        expect((await firstAttempt(hooks, id, deliveryId, 'an opening delivery')).status).toBe('succeeded');
      expect(closing.requests.filter((r) => r.nth === 0)).toHaveLength(3);

      const deliveryId = await sendTest(hooks, id);
      const detail = await firstAttempt(hooks, id, deliveryId, 'the delivery after the closes');
      expect({ status: detail.status, attempts: detail.attempts!.length }).toEqual({
        status: 'succeeded',
        attempts: 1,
      });
      // It met a closed connection first, then went on a new one (its first request).
      expect(closing.requests.filter((r) => r.nth > 0).length).toBeGreaterThan(0);
      expect(closing.requests.filter((r) => r.nth === 0)).toHaveLength(4);
    } finally {
      await closing.close();
    }
  });

  it.each([
    ['a C0 control', '\u0001'],
    ['DEL (RFC 9110 allows neither in a field value)', '\u007f'],
  ])(
    'when a response head holds %s, then the attempt is an invalid_response with no response kept',
    async (_what, byte) => {
      const garbled = await startRawReceiver((socket) =>
        socket.end(`HTTP/1.1 200 OK\r\nX-Bad: a${byte}b\r\nContent-Length: 2\r\n\r\nok`),
      );
      try {
        const { id } = await subscribe(hooks, `${garbled.url}/garbled-${byte.charCodeAt(0)}`);
        const deliveryId = await sendTest(hooks, id);
        const detail = await firstAttempt(hooks, id, deliveryId, 'the attempt');
        expect(detail.attempts![0]).toMatchObject({
          status_code: null,
          error: 'invalid_response',
          response: null,
        });
      } finally {
        await garbled.close();
      }
    },
  );

  it("when a test of an event type is asked for, then the receiver gets a sample in that event's shape, marked test, of a type the subscription asks for, its returns following from its market caps", async () => {
    const ok = await startReceiver();
    try {
      const { id } = await subscribe(hooks, `${ok.url}/typed`, ACC, { types: ['premium', '30d'] });
      for (const event of ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged', 'webhook.test']) {
        const deliveryId = await sendTest(hooks, id, { event });
        const detail = await detailOf(hooks, id, deliveryId);
        expect(detail.event).toBe(event);
      }
      await waitFor(() => ok.requests.length >= 5, 15_000, 50, 'five test deliveries');
      const byEvent = new Map(
        ok.requests.map((r) => [JSON.parse(r.body).event as string, JSON.parse(r.body)]),
      );
      for (const body of byEvent.values()) {
        webhookPayloadSchema.parse(body);
        expect(body.data.test).toBe(true);
        webhookDataSchema.parse(body.data);
      }
      expect(byEvent.get('signal.new').data.performance).toBeUndefined();
      expect(byEvent.get('signal.winner').data.performance.status).toBe('winner');
      expect(byEvent.get('signal.dead').data.performance.status).toBe('dead');
      expect(byEvent.get('signal.rugged').data.performance.status).toBe('rugged');
      // As the signals service derives them: ROI in percent from the entry cap (150 = +150 %).
      const percentOver = (entry: number, cap: number) => Math.round((cap / entry - 1) * 10_000) / 100;
      for (const event of ['signal.winner', 'signal.dead', 'signal.rugged']) {
        const { metrics, performance } = byEvent.get(event).data;
        expect({ event, roi: performance.roi, ath_roi: performance.ath_roi }).toEqual({
          event,
          roi: percentOver(metrics.mcap_entry, metrics.mcap_current),
          ath_roi: percentOver(metrics.mcap_entry, metrics.mcap_ath),
        });
      }
      expect(byEvent.get('signal.winner').data.performance.roi).toBeGreaterThan(0);
      expect(byEvent.get('signal.rugged').data.performance.roi).toBeLessThan(0);
      expect([...byEvent.values()].map((b) => b.data.type)).toEqual(Array(5).fill('premium'));
      const bad = await request(hooks.url)
        .post(`/v1/webhooks/${id}/test`)
        .set(hooks.auth(ACC))
        .send({ event: 'signal.updated' })
        .expect(400);
      expect(bad.body.error.message).toContain('event must be one of');
    } finally {
      await ok.close();
    }
  });
});

describe('receivers of several accounts on one host', () => {
  const broker = testBrokerPrefix('wh_host', removeBrokerPrefix);
  let hooks: WebhooksHarness;
  beforeAll(async () => {
    // Attempts wait far longer than this test takes: a POST held by the slow receiver stays open.
    hooks = await startWebhooks({
      label: 'wh_host',
      prefix: broker.prefix,
      env: { WEBHOOK_TIMEOUT_MS: '30000', WEBHOOK_RETRY_DELAYS_MS: '60000' },
    });
  });
  afterAll(async () => {
    await hooks.stop();
    await broker.cleanup();
  });

  it("when one account's receivers on a host hold more POSTs than a connection pool per host would, then another account's delivery to that host goes out at once and succeeds", async () => {
    const SLOW = 'acc_slow_neighbour';
    let slowOpen = 0;
    let slowOpenWhenFastArrived: number | undefined;
    const host = await startRawReceiver((socket, req) => {
      if (req.path.startsWith('/slow')) {
        // Never answered: held until the test ends.
        slowOpen++;
        socket.once('close', () => slowOpen--);
        return;
      }
      slowOpenWhenFastArrived ??= slowOpen;
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    try {
      // 7 subscriptions at their 10 POSTs in flight each: 70 held, past the 64 connections a
      // host had before.
      const slow = [];
      for (let i = 0; i < 7; i++) slow.push(await subscribe(hooks, `${host.url}/slow/${i}`, SLOW));
      for (const { id } of slow) for (let n = 0; n < 10; n++) await sendTest(hooks, id, {}, SLOW);
      await waitFor(async () => (slowOpen === 70 ? true : undefined), 20_000, 50, '70 POSTs held');

      const { id } = await subscribe(hooks, `${host.url}/fast`);
      const deliveryId = await sendTest(hooks, id);
      const detail = await firstAttempt(hooks, id, deliveryId, 'the delivery beside the held POSTs');
      expect({ status: detail.status, attempts: detail.attempts!.length }).toEqual({
        status: 'succeeded',
        attempts: 1,
      });
      expect(host.requests.filter((r) => r.path === '/fast')).toHaveLength(1);
      // It went out while every held POST was still open: it waited for none of them.
      expect(slowOpenWhenFastArrived).toBe(70);
    } finally {
      await host.close();
    }
  });
});

describe('recover', () => {
  const broker = testBrokerPrefix('wh_recover', removeBrokerPrefix);
  let hooks: WebhooksHarness;
  let mode = 500;
  let receiver: Receiver;
  beforeAll(async () => {
    hooks = await startWebhooks({
      label: 'wh_recover',
      prefix: broker.prefix,
      env: { WEBHOOK_RETRY_DELAYS_MS: '50' },
    });
    receiver = await startReceiver(() => ({ status: mode }));
  });
  afterAll(async () => {
    await hooks.stop();
    await receiver.close();
    await broker.cleanup();
  });

  const statusOf = async (id: string, deliveryId: string) => (await detailOf(hooks, id, deliveryId)).status;
  const failedAll = (id: string, ids: string[]) =>
    waitFor(
      async () => (await Promise.all(ids.map((d) => statusOf(id, d)))).every((s) => s === 'failed'),
      15_000,
      50,
      'the deliveries to fail',
    );
  const recover = (id: string, body: unknown) =>
    request(hooks.url)
      .post(`/v1/webhooks/${id}/recover`)
      .set(hooks.auth(ACC))
      .send(body as object);

  it('when failed deliveries are recovered since a time, then those created since are re-sent (count returned), a repeat queues none, and older ones stay failed', async () => {
    mode = 500;
    const { id } = await subscribe(hooks, `${receiver.url}/recover`);
    const older = await sendTest(hooks, id);
    await failedAll(id, [older]);
    await new Promise((r) => setTimeout(r, 10));
    const since = new Date().toISOString();
    const recent = [await sendTest(hooks, id), await sendTest(hooks, id), await sendTest(hooks, id)];
    await failedAll(id, recent);

    mode = 200;
    const first = await recover(id, { since }).expect(202);
    expect(recoverWebhookResultSchema.parse(first.body.data)).toEqual({
      since,
      queued: 3,
      next_cursor: null,
    });
    const again = await recover(id, { since }).expect(202);
    expect(again.body.data.queued).toBe(0);
    await waitFor(
      async () => (await Promise.all(recent.map((d) => statusOf(id, d)))).every((s) => s === 'succeeded'),
      15_000,
      50,
      'the recovered deliveries to succeed',
    );
    expect(await statusOf(id, older)).toBe('failed');
    // Each recovered delivery was sent once more (2 failed attempts + 1), with its own webhook-id.
    const byId = new Map<string, number>();
    for (const r of receiver.requests.filter((q) => q.path === '/recover'))
      byId.set(String(r.headers['webhook-id']), (byId.get(String(r.headers['webhook-id'])) ?? 0) + 1);
    expect([...byId.values()].sort()).toEqual([2, 3, 3, 3]);
    const afterwards = await recover(id, { since }).expect(202);
    expect(afterwards.body.data.queued).toBe(0);
  });

  it('when two recoveries run at once, then each failed delivery is queued once', async () => {
    mode = 500;
    const { id } = await subscribe(hooks, `${receiver.url}/race`);
    const since = new Date(Date.now() - 1000).toISOString();
    const ids = [await sendTest(hooks, id), await sendTest(hooks, id)];
    await failedAll(id, ids);
    mode = 200;
    const [a, b] = await Promise.all([recover(id, { since }), recover(id, { since })]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.data.queued + b.body.data.queued).toBe(2);
  });

  it("when recover is asked without a valid since, of a disabled webhook or of another account's, then 400, 409 and 404", async () => {
    const { id } = await subscribe(hooks, `${receiver.url}/bad`);
    for (const body of [
      {},
      { since: 'yesterday' },
      { since: '2026-02-30' },
      { since: '2026-01-01T00:00:00' },
      { since: '2026-01-01T00:00:00Z', extra: 1 },
    ]) {
      const res = await recover(id, body).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    // A calendar date is midnight UTC, as `since` of the lists reads it; an offset too.
    const byDate = await recover(id, { since: '2026-01-01' }).expect(202);
    expect(byDate.body.data.since).toBe('2026-01-01T00:00:00.000Z');
    const byOffset = await recover(id, { since: '2026-01-01T02:00:00+02:00' }).expect(202);
    expect(byOffset.body.data.since).toBe('2026-01-01T00:00:00.000Z');
    await request(hooks.url)
      .post(`/v1/webhooks/${id}/recover`)
      .set(hooks.auth('acc_someone_else'))
      .send({ since: '2026-01-01T00:00:00Z' })
      .expect(404);
    await request(hooks.url)
      .patch(`/v1/webhooks/${id}`)
      .set(hooks.auth(ACC))
      .send({ enabled: false })
      .expect(200);
    const disabled = await recover(id, { since: '2026-01-01T00:00:00Z' }).expect(409);
    expect(disabled.body.error.message).toContain('Enable the webhook');
  });
});

describe('attempts stored by either release', () => {
  const broker = testBrokerPrefix('wh_forms', removeBrokerPrefix);
  let hooks: WebhooksHarness;
  beforeAll(async () => {
    hooks = await startWebhooks({ label: 'wh_forms', prefix: broker.prefix, worker: false });
  });
  afterAll(async () => {
    await hooks.stop();
    await broker.cleanup();
  });

  it('when one attempt was stored with its request and response as documents and the next as one string, then the delivery shows both alike, and lists by status read both', async () => {
    const url = 'http://127.0.0.1:9/forms';
    const { id } = await subscribe(hooks, url);
    const c = webhookCollections(hooks.deps.mongo);
    const deliveryId = deliveryIdFor(id, 'evt_forms', Date.now());
    const payload = '{"event":"signal.new","data":{}}';
    await c.deliveries.insertOne({
      _id: deliveryId,
      account_id: ACC,
      webhook_id: id,
      event_id: 'evt_forms',
      event: 'signal.new',
      payload,
      status: 'pending',
      created_at: new Date(),
    });
    const sent = { url, headers: { 'content-type': 'application/json', 'webhook-id': deliveryId } };
    const response = {
      status: 500,
      headers: [
        { name: 'x-receiver', value: 'a"b' },
        { name: 'content-type', value: 'text/plain' },
      ],
      body: 'down',
      body_encoding: 'text' as const,
      body_truncated: false,
    };
    const entry = (k: number, status: 'pending' | 'failed') => ({
      _id: `${deliveryId}:${2 * k}`,
      delivery_id: deliveryId,
      webhook_id: id,
      seq: 2 * k,
      kind: 'attempt' as const,
      attempt: k,
      status,
      next_attempt_at: status === 'pending' ? new Date(Date.now() + 60_000) : null,
      at: new Date(),
      started_at: new Date(),
      duration_ms: 5,
      status_code: 500,
      error: 'http_500',
    });
    // As the release before 2026-11-25.2 and every one up to it write it, then as later ones do.
    await c.deliveryLog.insertOne({ ...entry(1, 'pending'), request: sent, response });
    await c.deliveryLog.insertOne({
      ...entry(2, 'failed'),
      exchange: JSON.stringify({ request: sent, response }),
    });
    // Every release marks a delivery open at its first failed attempt (status=failed reads those).
    await c.openDeliveries.insertOne({ _id: deliveryId, webhook_id: id, account_id: ACC, at: new Date() });

    const detail = await detailOf(hooks, id, deliveryId);
    expect(detail.status).toBe('failed');
    const [first, second] = detail.attempts ?? [];
    const shown = {
      request: { url, headers: sent.headers, body: payload },
      response: {
        status: 500,
        headers: { 'x-receiver': 'a"b', 'content-type': 'text/plain' },
        headers_truncated: false,
        body: 'down',
        body_encoding: 'text',
        body_truncated: false,
      },
    };
    expect(first).toMatchObject({ attempt: 1, ...shown });
    expect(second).toMatchObject({ attempt: 2, ...shown });

    const failed = await request(hooks.url)
      .get(`/v1/webhooks/${id}/deliveries?status=failed`)
      .set(hooks.auth(ACC))
      .expect(200);
    expect(failed.body.data.map((d: { id: string }) => d.id)).toEqual([deliveryId]);
    expect(failed.body.data[0]).toMatchObject({ attempts_made: 2, last_response_status: 500 });
  });
});
