import { SignalClient } from './client.js';
import { RateLimitError } from './errors.js';
import type { WebhookTestEvent } from './types.js';

/** A request as the fake fetch saw it. */
interface Sent {
  method: string;
  url: URL;
  idempotencyKey: string | null;
  body: unknown;
}

/**
 * A client whose fetch is a script: each request is recorded and answered by `respond` (by
 * default a success envelope), so these tests need no server.
 */
function scripted(respond: (sent: Sent, n: number) => Response = () => ok({ id: 'x' })) {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    const request: Sent = {
      method: init?.method ?? 'GET',
      url: new URL(String(input)),
      idempotencyKey: headers.get('idempotency-key'),
      body,
    };
    sent.push(request);
    return respond(request, sent.length);
  };
  const client = new SignalClient({ baseUrl: 'http://api.test', apiKey: 'sk_test', fetch, maxRetries: 0 });
  return { client, sent };
}

function ok(data: unknown, headers: Record<string, string> = {}, meta?: unknown): Response {
  return new Response(JSON.stringify({ success: true, data, meta }), {
    status: 200,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

const rateHeaders = (remaining: number) => ({
  'x-ratelimit-limit': '60',
  'x-ratelimit-remaining': String(remaining),
  'x-ratelimit-reset': '1800000060',
});

describe('SignalClient.rateLimit', () => {
  it('when no response has carried the X-RateLimit headers, then rateLimit is undefined', async () => {
    const { client } = scripted();
    expect(client.rateLimit).toBeUndefined();
    await client.stats.get();
    expect(client.rateLimit).toBeUndefined();
  });

  it('when responses carry the X-RateLimit headers, then rateLimit is the latest (a 429 too) and one without them keeps it', async () => {
    const { client } = scripted((_sent, n) => {
      if (n === 1) return ok({ id: 'sig_1' }, rateHeaders(2));
      if (n === 2)
        return new Response(
          JSON.stringify({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: 'slow down' } }),
          { status: 429, headers: { ...rateHeaders(0), 'retry-after': '60' } },
        );
      return ok({ id: 'sig_1' });
    });
    await client.signals.get('sig_1');
    expect(client.rateLimit).toEqual({ limit: 60, remaining: 2, reset: 1800000060 });
    await expect(client.signals.get('sig_1')).rejects.toBeInstanceOf(RateLimitError);
    expect(client.rateLimit).toEqual({ limit: 60, remaining: 0, reset: 1800000060 });
    await client.signals.get('sig_1');
    expect(client.rateLimit).toEqual({ limit: 60, remaining: 0, reset: 1800000060 });
  });
});

describe('webhooks: one object holding body fields and request options', () => {
  // Typed as a variable, not a fresh literal: TypeScript takes it for either overload, as untyped
  // JavaScript does.
  const winner: { event: WebhookTestEvent; idempotencyKey: string } = {
    event: 'signal.winner',
    idempotencyKey: 'test-key-1',
  };

  it('when sendTest gets { event, idempotencyKey }, then the event is sent with that Idempotency-Key', async () => {
    const { client, sent } = scripted();
    await client.webhooks.sendTest('wh_1', winner);
    expect(sent.map((s) => [s.method, s.url.pathname, s.body, s.idempotencyKey])).toEqual([
      ['POST', '/v1/webhooks/wh_1/test', { event: 'signal.winner' }, 'test-key-1'],
    ]);
  });

  it('when recover gets { cursor, limit, idempotencyKey }, then the page is sent with that Idempotency-Key', async () => {
    const { client, sent } = scripted(() =>
      ok({ since: '2026-01-15T09:30:00.000Z', queued: 0, next_cursor: null }),
    );
    const page = { cursor: 'dlv_9', limit: 50, idempotencyKey: 'test-key-2' };
    await client.webhooks.recover('wh_1', new Date('2026-01-15T09:30:00Z'), page);
    expect(sent.map((s) => [s.url.pathname, s.body, s.idempotencyKey])).toEqual([
      [
        '/v1/webhooks/wh_1/recover',
        { since: '2026-01-15T09:30:00.000Z', cursor: 'dlv_9', limit: 50 },
        'test-key-2',
      ],
    ]);
  });

  it('when webhooks.list gets { page, limit, timeoutMs }, then the page is asked for', async () => {
    const { client, sent } = scripted(() => ok([]));
    const query = { page: 2, limit: 10, timeoutMs: 5_000 };
    await client.webhooks.list(query);
    expect(Object.fromEntries(sent[0]?.url.searchParams ?? [])).toEqual({ page: '2', limit: '10' });
  });

  it('when each form is used as typed, then options alone send no body and a page with options sends both', async () => {
    const { client, sent } = scripted(() =>
      ok({ since: '2026-01-15T09:30:00.000Z', queued: 0, next_cursor: null }),
    );
    await client.webhooks.sendTest('wh_1', { idempotencyKey: 'k-a' });
    await client.webhooks.sendTest('wh_1', { event: 'signal.dead' }, { idempotencyKey: 'k-b' });
    await client.webhooks.recover('wh_1', '2026-01-15T09:30:00Z', { idempotencyKey: 'k-c' });
    await client.webhooks.recover(
      'wh_1',
      '2026-01-15T09:30:00Z',
      { cursor: 'dlv_1' },
      { idempotencyKey: 'k-d' },
    );
    expect(sent.map((s) => [s.body, s.idempotencyKey])).toEqual([
      [undefined, 'k-a'],
      [{ event: 'signal.dead' }, 'k-b'],
      [{ since: '2026-01-15T09:30:00Z' }, 'k-c'],
      [{ since: '2026-01-15T09:30:00Z', cursor: 'dlv_1' }, 'k-d'],
    ]);
  });

  it('when an option is given in the object and again in the options with another value, then it is a TypeError and nothing is sent', async () => {
    const { client, sent } = scripted();
    await expect(client.webhooks.sendTest('wh_1', winner, { idempotencyKey: 'other' })).rejects.toThrow(
      new TypeError(
        'webhooks.sendTest: idempotencyKey given twice, in the first object and in the request options, ' +
          'with different values: pass it once. Nothing was sent.',
      ),
    );
    expect(sent).toEqual([]);
  });
});

describe('invalid dates', () => {
  it('when since is an invalid Date, then a TypeError names since and nothing is sent', async () => {
    const { client, sent } = scripted();
    const nope = new Date('nope');
    const message = /^since is an invalid Date: pass a valid Date or an ISO 8601 time/;
    await expect(client.signals.list({ since: nope })).rejects.toThrow(TypeError);
    await expect(client.signals.list({ since: nope })).rejects.toThrow(message);
    await expect(client.signals.iterate({ since: nope }).next()).rejects.toThrow(message);
    await expect(client.webhooks.recover('wh_1', nope)).rejects.toThrow(message);
    expect(sent).toEqual([]);
  });
});
