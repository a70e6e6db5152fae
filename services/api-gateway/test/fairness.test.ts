import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { metrics } from '@signal/service-kit';
import { startOfAMinuteIfLate, startReceiver, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * No client slows another: slow readers, trickled uploads, bursts and connection hoarders of
 * one account or address delay only their own requests. The gateway runs with few upstream
 * connections and an upstream timeout longer than any test: a request of another account that
 * waited for a slow client would wait for as long as that client holds out (the test's deadline
 * fails it), never be let through by a timeout; and the service sees more of the slow clients'
 * requests at once than the gateway has connections to it.
 */
const UPSTREAM_TIMEOUT_MS = 600_000;
/** Fails only a hung run: the requests it bounds are served in milliseconds on a quiet machine. */
const HUNG_MS = 30_000;
const BIG_BODY = JSON.stringify({ success: true, data: 'x'.repeat(256 * 1024) });

let upstream: Receiver;
let gw: GatewayHarness;

beforeAll(async () => {
  upstream = await startReceiver((req) =>
    req.path.includes('big')
      ? { status: 200, headers: { 'content-type': 'application/json' }, body: BIG_BODY }
      : { status: 200, headers: { 'content-type': 'application/json' }, body: '{"success":true}' },
  );
  gw = await startGateway({
    label: 'gw_fair',
    upstreams: { signals: upstream.url, stats: upstream.url, webhooks: upstream.url },
    env: {
      UPSTREAM_CONNECTIONS: '2',
      UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
      MAX_HELD_RESPONSE_BYTES: String(64 * 1024),
      CLIENT_MAX_CONNECTIONS: '40',
    },
  });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

const port = () => Number(new URL(gw.url).port);

/**
 * A client that sends `count` pipelined requests on a connection with a 4 KiB receive buffer
 * and never reads a byte of the responses (Python: Node cannot size a TCP receive buffer).
 * Settles when the gateway closes the connection.
 */
const SLOW_READER = `
import socket, sys, time
port, key, path, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
one = f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer {key}\\r\\n\\r\\n"
s.sendall((one * count).encode())
print("sent", flush=True)
# Never reads: waits until the gateway cuts the connection (a send then fails) or 60 s.
for _ in range(600):
    time.sleep(0.1)
    try:
        s.send(b"")
        if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
            break
    except BlockingIOError:
        pass
    except OSError:
        break
print("closed", flush=True)
`;

function slowReader(
  key: string,
  path: string,
  count: number,
): Promise<{ proc: ChildProcess; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const proc = spawn('python3', ['-c', SLOW_READER, String(port()), key, path, String(count)]);
    let out = '';
    const closed = new Promise<void>((done) => proc.once('exit', () => done()));
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('sent')) resolve({ proc, closed });
    });
    proc.once('error', reject);
  });
}

/** `served`, or a failure naming `what` when it has not settled after HUNG_MS. */
async function beforeHung<T>(served: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not served after ${HUNG_MS} ms`)), HUNG_MS);
  });
  try {
    return await Promise.race([served, hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function slowReaderCuts(): Promise<number> {
  const values = (await metrics.fairnessRefusals().get()).values;
  return values.find((v) => v.labels.reason === 'slow_reader')?.value ?? 0;
}

describe('slow readers', () => {
  it("when one account's clients stop reading large responses, then another account's requests to the same service never wait for them", async () => {
    const slow = await gw.account({ per_minute: 100_000, per_day: 1_000_000 });
    const other = await gw.account({ per_minute: 100_000, per_day: 1_000_000 });
    const cutBefore = await slowReaderCuts();
    // Six connections, each asking for 40 responses of 256 KiB it never reads: more than the
    // kernel's socket buffers hold, and more connections than the gateway has to the service.
    const readers = await Promise.all(
      Array.from({ length: 6 }, () => slowReader(slow.key, '/v1/stats?big=1', 40)),
    );
    try {
      // Six slow connections' requests reach the service through two upstream connections: no
      // slow reader holds one while its response waits to be read.
      await waitFor(
        () => upstream.requests.filter((r) => r.path.includes('big')).length >= 6,
        HUNG_MS,
        20,
        "the six slow readers' requests at the service",
      );
      const results = await beforeHung(
        Promise.all(
          Array.from({ length: 10 }, () =>
            request(gw.url).get('/v1/stats?limit=1').set('Authorization', `Bearer ${other.key}`),
          ),
        ),
        "the other account's requests",
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      // The slow readers are cut once the gateway holds more than its bound for them.
      await Promise.all(readers.map((r) => r.closed));
      expect(await slowReaderCuts()).toBeGreaterThan(cutBefore);
    } finally {
      for (const r of readers) r.proc.kill();
    }
  });
});

describe('trickled uploads', () => {
  it("when a client trickles a request body, then another account's requests are served while it is still sending", async () => {
    const trickler = await gw.account({ per_minute: 100_000, per_day: 1_000_000 });
    const other = await gw.account({ per_minute: 100_000, per_day: 1_000_000 });
    const body = JSON.stringify({ url: 'https://example.com/hook', pad: 'y'.repeat(40) });
    // Three trickled uploads: more than the gateway's two connections to the service.
    const sockets = await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise<Socket>((resolve) => {
            const s = connect(port(), '127.0.0.1', () => {
              s.write(
                `POST /v1/webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${trickler.key}\r\n` +
                  `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
              );
              resolve(s);
            });
          }),
      ),
    );
    try {
      // Served while all three uploads are unfinished: none of them holds an upstream connection.
      const results = await beforeHung(
        Promise.all(
          Array.from({ length: 5 }, () =>
            request(gw.url).get('/v1/webhooks').set('Authorization', `Bearer ${other.key}`),
          ),
        ),
        "the other account's requests",
      );
      expect(results.map((r) => r.status)).toEqual(Array(5).fill(200));
      // The uploads are still unfinished: the service has seen none of them yet.
      expect(upstream.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
      // Finished, each is sent on whole.
      const responses = sockets.map(
        (s) =>
          new Promise<string>((resolve) => {
            let text = '';
            s.on('data', (c: Buffer) => {
              text += c.toString();
              if (text.includes('\r\n\r\n')) resolve(text);
            });
          }),
      );
      for (const s of sockets) s.write(body.slice(5));
      for (const text of await Promise.all(responses)) expect(text.startsWith('HTTP/1.1 200')).toBe(true);
      const posted = upstream.requests.filter((r) => r.method === 'POST');
      expect(posted.map((r) => r.body)).toEqual([body, body, body]);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});

/**
 * A service that holds each `?hold=1` request until the test releases it (the others are
 * answered at once), so a request stays in progress for as long as the test needs it to.
 */
async function holdingService() {
  const held: ServerResponse[] = [];
  /** Held requests whose connection the gateway closed before they were answered. */
  let cancelled = 0;
  const answer = (res: ServerResponse) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (!req.url?.includes('hold=1')) return answer(res);
      held.push(res);
      res.once('close', () => {
        if (!res.writableFinished) cancelled++;
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    heldCount: () => held.length,
    cancelledCount: () => cancelled,
    release: () => held.splice(0).forEach(answer),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('requests in flight per account', () => {
  let bounded: GatewayHarness;
  let holding: Awaited<ReturnType<typeof holdingService>>;
  beforeAll(async () => {
    holding = await holdingService();
    bounded = await startGateway({
      label: 'gw_fair_inflight',
      upstreams: { signals: holding.url, stats: holding.url, webhooks: holding.url },
      env: { ACCOUNT_MAX_IN_FLIGHT: '3' },
    });
  });
  afterAll(async () => {
    await bounded.stop();
    await holding.close();
  });

  it("when an account has its most requests in progress, then its next one is a 429 that uses none of its plan, and another account's is served", async () => {
    // The plan's count is read at the end: every request of the test falls in one minute window.
    await startOfAMinuteIfLate(10_000);
    const busy = await bounded.account({ per_minute: 60, per_day: 10_000 });
    const other = await bounded.account({ per_minute: 60, per_day: 10_000 });
    const held = Array.from({ length: 3 }, () =>
      request(bounded.url).get('/v1/stats?hold=1').set('Authorization', `Bearer ${busy.key}`),
    );
    const started = held.map((r) => r.then((res) => res));
    // The three are at the service (held there until released) before the fourth is sent.
    await waitFor(() => holding.heldCount() === 3, HUNG_MS, 20, 'three requests held at the service');
    const refused = await request(bounded.url).get('/v1/stats').set('Authorization', `Bearer ${busy.key}`);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(refused.body.error.message).toContain('3 requests in progress');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['x-ratelimit-limit']).toBe('60');
    await request(bounded.url).get('/v1/stats').set('Authorization', `Bearer ${other.key}`).expect(200);
    holding.release();
    const done = await Promise.all(started);
    expect(done.map((r) => r.status)).toEqual([200, 200, 200]);
    // Three requests used the plan; the refused one did not. The limits are fixed windows (a
    // loaded machine can spread these requests over two minutes): the next request's window
    // holds it and those of the three its X-RateLimit-Reset names.
    const next = await request(bounded.url)
      .get('/v1/stats')
      .set('Authorization', `Bearer ${busy.key}`)
      .expect(200);
    const sameWindow = done.filter(
      (r) => r.headers['x-ratelimit-reset'] === next.headers['x-ratelimit-reset'],
    );
    expect(next.headers['x-ratelimit-remaining']).toBe(String(60 - 1 - sameWindow.length));
  });
});

/** How many requests of `route` the gateway recorded with each status (http_request_duration_seconds). */
async function recordedStatuses(route: string): Promise<Record<string, number>> {
  const { values } = await metrics.httpDuration().get();
  const out: Record<string, number> = {};
  for (const v of values)
    if (v.metricName === 'http_request_duration_seconds_count' && v.labels.route === route)
      out[String(v.labels.status)] = (out[String(v.labels.status)] ?? 0) + v.value;
  return out;
}

describe('clients that leave', () => {
  let gateway: GatewayHarness;
  let holding: Awaited<ReturnType<typeof holdingService>>;
  beforeAll(async () => {
    holding = await holdingService();
    gateway = await startGateway({
      label: 'gw_fair_gone',
      upstreams: { signals: holding.url, stats: holding.url, webhooks: holding.url },
    });
  });
  afterAll(async () => {
    await gateway.stop();
    await holding.close();
  });

  it("when a client closes its connection while the service works on its request, then the service's request is cancelled and the request is recorded as 499, not as a 5xx", async () => {
    const { key } = await gateway.account();
    const before = await recordedStatuses('/v1/stats');
    const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`GET /v1/stats?hold=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await waitFor(() => holding.heldCount() === 1, HUNG_MS, 20, 'the request held at the service');
    socket.destroy();
    await waitFor(() => holding.cancelledCount() === 1, HUNG_MS, 20, "the service's request cancelled");
    const recorded = async () => {
      const after = await recordedStatuses('/v1/stats');
      return {
        gone: (after['499'] ?? 0) - (before['499'] ?? 0),
        unavailable: (after['503'] ?? 0) - (before['503'] ?? 0),
      };
    };
    await waitFor(async () => (await recorded()).gone === 1, HUNG_MS, 20, 'the request recorded');
    expect(await recorded()).toEqual({ gone: 1, unavailable: 0 });
    // The gateway serves the account's next request as usual.
    await request(gateway.url).get('/v1/stats').set('Authorization', `Bearer ${key}`).expect(200);
  });
});

describe('connections per address', () => {
  it('when an address holds its most open connections, then a request on one more is a 429 with the headers and that connection closes', async () => {
    const { key } = await gw.account({ per_minute: 1000, per_day: 10_000 });
    const open: Socket[] = [];
    try {
      // Connections of earlier tests may still be closing: fill up to the bound from wherever it is.
      let refusal = '';
      for (let i = 0; i < 60 && !refusal; i++) {
        const s = await new Promise<Socket>((resolve) => {
          const c = connect(port(), '127.0.0.1', () => resolve(c));
        });
        open.push(s);
        const text = await new Promise<string>((resolve) => {
          let t = '';
          s.on('data', (c: Buffer) => {
            t += c.toString();
            if (t.includes('\r\n\r\n') && t.includes('"success"')) resolve(t);
          });
          s.write(`GET /v1/signals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
        });
        if (text.startsWith('HTTP/1.1 429')) refusal = text;
      }
      expect(refusal).toMatch(/^HTTP\/1\.1 429/);
      expect(refusal).toMatch(/\r\nconnection: close\r\n/i);
      expect(refusal).toMatch(/\r\nx-ratelimit-limit: \d+\r\n/i);
      expect(refusal).toContain('Too many open connections from this address (at most 40)');
      const last = open[open.length - 1]!;
      await new Promise<void>((resolve) =>
        last.destroyed ? resolve() : last.once('close', () => resolve()),
      );
      // One closed, the address may open another (once the gateway has seen that one close).
      open.shift()!.destroy();
      await waitFor(
        async () =>
          (await request(gw.url).get('/v1/signals').set('Authorization', `Bearer ${key}`)).status === 200,
        HUNG_MS,
        50,
        'a request on a new connection served',
      );
    } finally {
      for (const s of open) s.destroy();
    }
  });
});

describe('request targets', () => {
  it('when a client sends an absolute-form target, then it is served as its path and query', async () => {
    const { key } = await gw.account({ per_minute: 1000, per_day: 10_000 });
    const text = await new Promise<string>((resolve) => {
      const s = connect(port(), '127.0.0.1', () => {
        s.write(
          `GET http://127.0.0.1:${port()}/v1/stats?period=7d HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
            `Authorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
        );
      });
      let t = '';
      s.on('data', (c: Buffer) => (t += c.toString()));
      s.on('close', () => resolve(t));
    });
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(upstream.requests.at(-1)?.path).toBe('/v1/stats?period=7d');
  });
});
