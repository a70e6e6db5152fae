import {
  AuthenticationError,
  RateLimitError,
  SignalClient,
  SseParser,
  type RetryEvent,
  type SseEvent,
  type StreamEvent,
} from '@signal/sdk';
import { sseServer, whenOpened, type SseServer } from './sse-server';

/** `client.signals.stream` against a local event stream (sse-server.ts) and the SSE parser. */
const ids = (events: StreamEvent[]) => events.map((e) => `${e.event}:${e.id ?? ''}`);

describe('client.signals.stream against a local event stream', () => {
  let server: SseServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('when the connection drops while events are published, then it reconnects after the server’s retry with Last-Event-ID and yields each event once, none lost', async () => {
    server = await sseServer();
    const retries: RetryEvent[] = [];
    const client = new SignalClient({
      baseUrl: server.url,
      apiKey: 'sk_test',
      onRetry: (e) => retries.push(e),
    });
    const stream = client.signals.stream({ type: 'premium' });
    const seen: StreamEvent[] = [];
    const s = server;
    whenOpened(s, 1, () => s.publish());
    for await (const e of stream) {
      seen.push(e);
      if (seen.length === 1) s.publish();
      if (seen.length === 2) {
        s.drop();
        s.publish();
        s.publish();
      }
      if (seen.length === 4) s.publish();
      if (seen.length === 5) break;
    }
    expect(ids(seen)).toEqual([
      'signal.new:1-0',
      'signal.new:2-0',
      'signal.new:3-0',
      'signal.new:4-0',
      'signal.new:5-0',
    ]);
    expect(s.opened).toEqual([undefined, '2-0']);
    expect(retries.map((r) => r.delayMs)).toEqual([20]);
    expect(stream.lastEventId).toBe('5-0');
    const first = seen[0]!;
    expect(first.event === 'signal.new' && first.data.data.id).toBe('sig_1');
  }, 180_000);

  it('when the first connection has opened, then a published event arrives with its payload (the stream is live)', async () => {
    server = await sseServer();
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const s = server;
    whenOpened(s, 1, () => s.publish('signal.winner'));
    for await (const e of client.signals.stream({ events: ['signal.winner'] })) {
      expect(e.event).toBe('signal.winner');
      expect(e.event !== 'reset' && e.data.event).toBe('signal.winner');
      break;
    }
  });

  it('when the code checks e.event, then e.data is that event’s payload: a winner’s performance needs no further check', async () => {
    const winner = {
      event: 'signal.winner',
      timestamp: '2026-01-15T09:30:00.000Z',
      data: {
        id: 'sig_9',
        type: 'premium',
        is_premium: true,
        performance: { roi: 150, ath_roi: 180, status: 'winner', time_to_ath_hours: 2 },
      },
    };
    server = await sseServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        `id: 1-0\nevent: signal.new\ndata: ${JSON.stringify({ ...winner, event: 'signal.new' })}\n\n`,
      );
      res.write(`id: 2-0\nevent: signal.winner\ndata: ${JSON.stringify(winner)}\n\n`);
      return true;
    });
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const rois: number[] = [];
    let seen = 0;
    for await (const e of client.signals.stream()) {
      seen += 1;
      // Compiles only when the check narrows e.data (the winner payload's performance is required).
      if (e.event === 'signal.winner') rois.push(e.data.data.performance.roi);
      if (seen === 2) break;
    }
    expect(rois).toEqual([150]);
  });

  it('when the server sends a reset, then it is yielded and the next reconnect resumes from its id', async () => {
    server = await sseServer((req, res, s) => {
      if (s.opened.length > 1) return false;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'retry: 10\n\nid: 9-0\nevent: reset\ndata: {"reason":"unknown","message":"Re-sync.","resync":"/v1/signals"}\n\n',
      );
      res.end();
      return true;
    });
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const stream = client.signals.stream({ lastEventId: 'nope' });
    const seen: StreamEvent[] = [];
    const s = server;
    for await (const e of stream) {
      seen.push(e);
      if (e.event === 'reset') setTimeout(() => s.publish(), 50);
      if (e.event === 'signal.new') break;
    }
    expect(seen[0]).toEqual({
      event: 'reset',
      id: '9-0',
      data: { reason: 'unknown', message: 'Re-sync.', resync: '/v1/signals' },
    });
    expect(s.opened).toEqual(['nope', '9-0']);
  });

  it('when the server ends a stream with overflow or reconnect, then the client reconnects from its last event and neither is yielded', async () => {
    server = await sseServer((req, res, s) => {
      const n = s.opened.length;
      if (n > 2) return false;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const e = s.publish();
      res.write(`retry: 10\n\nid: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`);
      res.end(
        `event: ${n === 1 ? 'overflow' : 'reconnect'}\ndata: {"reason":"x","message":"Reconnect."}\n\n`,
      );
      return true;
    });
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const seen: StreamEvent[] = [];
    const s = server;
    for await (const e of client.signals.stream()) {
      seen.push(e);
      if (seen.length === 2) s.publish();
      if (seen.length === 3) break;
    }
    // The third connection replays from 2-0 inclusive: 2-0 is dropped, 3-0 (published there) yielded.
    expect(ids(seen)).toEqual(['signal.new:1-0', 'signal.new:2-0', 'signal.new:3-0']);
    expect(server.opened).toEqual([undefined, '1-0', '2-0']);
  });

  it('when the stream ends with an error event (the key revoked or expired), then the iterator throws AuthenticationError and does not reconnect', async () => {
    server = await sseServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        'retry: 10\n\nevent: error\ndata: {"code":"KEY_EXPIRED","message":"This API key has expired. Generate a new key in your dashboard under API settings."}\n\n',
      );
      return true;
    });
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const err = await (async () => {
      for await (const e of client.signals.stream()) void e;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(err).toMatchObject({
      code: 'KEY_EXPIRED',
      message: 'This API key has expired. Generate a new key in your dashboard under API settings.',
    });
    expect(server.opened).toHaveLength(1);
  });

  it('when opening is refused with 429 every time, then RateLimitError is thrown after maxRetries retries', async () => {
    server = await sseServer((req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(
        JSON.stringify({
          success: false,
          error: {
            code: 'RATE_LIMIT_EXCEEDED',
            message: 'This account has 5 live streams open.',
            retry_after: 0,
          },
        }),
      );
      return true;
    });
    const retries: RetryEvent[] = [];
    const client = new SignalClient({
      baseUrl: server.url,
      apiKey: 'sk_test',
      maxRetries: 2,
      onRetry: (e) => retries.push(e),
    });
    const err = await (async () => {
      for await (const e of client.signals.stream()) void e;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ status: 429, message: 'This account has 5 live streams open.' });
    expect(server.opened).toHaveLength(3);
    expect(retries.map((r) => [r.status, r.delayMs])).toEqual([
      [429, 0],
      [429, 0],
    ]);
  });

  it('when opening is refused with 401, then AuthenticationError is thrown at once', async () => {
    server = await sseServer((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          success: false,
          error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key.' },
        }),
      );
      return true;
    });
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    await expect(
      (async () => {
        for await (const e of client.signals.stream()) void e;
      })(),
    ).rejects.toBeInstanceOf(AuthenticationError);
    expect(server.opened).toHaveLength(1);
  });

  it('when the caller aborts, then the iterator returns and the connection closes', async () => {
    server = await sseServer();
    const client = new SignalClient({ baseUrl: server.url, apiKey: 'sk_test' });
    const controller = new AbortController();
    const s = server;
    const seen: StreamEvent[] = [];
    const reading = (async () => {
      for await (const e of client.signals.stream({}, { signal: controller.signal })) seen.push(e);
    })();
    whenOpened(s, 1, () => controller.abort());
    await reading;
    expect(s.opened).toHaveLength(1);
  });
});

describe('SseParser', () => {
  it('when text arrives split anywhere, with CRLF, comments, multi-line data and a retry field, then the events come out whole', () => {
    const events: SseEvent[] = [];
    const retries: number[] = [];
    const comments: string[] = [];
    const parser = new SseParser({
      event: (e) => events.push(e),
      retry: (ms) => retries.push(ms),
      comment: (c) => comments.push(c),
    });
    const text =
      'retry: 2000\r\n\r\n: keep-alive\n\nid: 1-0\nevent: signal.new\ndata: {"a":\ndata: 1}\n\nevent: reset\r\ndata: x\r\n\r\n';
    for (const ch of text) parser.push(ch);
    expect(events).toEqual([
      { event: 'signal.new', id: '1-0', data: '{"a":\n1}' },
      { event: 'reset', id: undefined, data: 'x' },
    ]);
    expect(retries).toEqual([2000]);
    expect(comments).toEqual(['keep-alive']);
  });
});
