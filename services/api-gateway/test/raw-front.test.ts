import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { metrics } from '@signal/service-kit';
import { RawFront } from '../src/http/raw-front';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * The raw front (src/http/raw-front.ts) from a client's side: raw bytes on a socket, the answers
 * compared with a second gateway whose node:http reads everything (API_FRONT=node), both in front
 * of one scripted service.
 */

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** How the body was framed on the wire. */
  chunked: boolean;
}

/** Reads answers off a byte stream (Content-Length or chunked; HEAD answers carry no body). */
function parseAnswers(bytes: Buffer, heads: boolean[]): { answers: Answer[]; rest: Buffer } {
  const answers: Answer[] = [];
  let at = 0;
  while (answers.length < heads.length) {
    const end = bytes.indexOf('\r\n\r\n', at, 'latin1');
    if (end < 0) break;
    const lines = bytes.toString('latin1', at, end).split('\r\n');
    const status = Number(lines[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    let p = end + 4;
    const chunked = headers['transfer-encoding'] === 'chunked';
    let body: Buffer = Buffer.alloc(0);
    if (heads[answers.length]) {
      // HEAD: no body, whatever the framing headers say.
    } else if (chunked) {
      const parts: Buffer[] = [];
      for (;;) {
        const eol = bytes.indexOf('\r\n', p, 'latin1');
        if (eol < 0) return { answers, rest: bytes.subarray(at) };
        const size = parseInt(bytes.toString('latin1', p, eol), 16);
        if (bytes.length < eol + 2 + size + 2) return { answers, rest: bytes.subarray(at) };
        parts.push(bytes.subarray(eol + 2, eol + 2 + size));
        p = eol + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (bytes.length < p + length) break;
      body = bytes.subarray(p, p + length);
      p += length;
    }
    answers.push({ status, headers, body: body.toString('utf8'), chunked });
    at = p;
  }
  return { answers, rest: bytes.subarray(at) };
}

/** A client connection that writes raw bytes and reads answers. */
class RawClient {
  private received: Buffer = Buffer.alloc(0);
  closed = false;
  private waiter?: () => void;
  private readonly socket: net.Socket;

  constructor(port: number) {
    this.socket = net.connect({ port, host: '127.0.0.1' });
    this.socket.on('data', (d: Buffer) => {
      this.received = Buffer.concat([this.received, d]);
      this.waiter?.();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    this.socket.on('error', () => undefined);
  }

  send(text: string): void {
    this.socket.write(text, 'latin1');
  }

  /** The next answers (one per entry: is it a HEAD answer?), within 5 s. */
  async answers(heads: boolean[]): Promise<Answer[]> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const { answers, rest } = parseAnswers(this.received, heads);
      if (answers.length === heads.length) {
        this.received = rest;
        return answers;
      }
      if (this.closed || Date.now() > deadline)
        throw new Error(
          `got ${answers.length} of ${heads.length} answers: ${this.received.toString('latin1')}`,
        );
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  async untilClosed(ms = 5000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

let service: Server;
let serviceUrl: string;
let raw: GatewayHarness;
let node: GatewayHarness;
let key: string;
/** Requests the service is answering slowly, by path (the abort test watches them). */
const slowClosed: string[] = [];

beforeAll(async () => {
  service = createServer((req, res) => {
    const path = req.url ?? '';
    if (path.startsWith('/v1/signals/chunked')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"parts":');
      setTimeout(() => res.end('[1,2]}'), 5);
      return;
    }
    if (path.startsWith('/v1/signals/big')) {
      const body = 'x'.repeat(1024 * 1024);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(body.length) });
      res.end(body);
      return;
    }
    if (path.startsWith('/v1/signals/slow')) {
      res.on('close', () => {
        if (!res.writableFinished) slowClosed.push(path);
      });
      setTimeout(() => {
        if (!res.destroyed) res.end('{"late":true}');
      }, 2000);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.stringify({
        method: req.method,
        path,
        body: Buffer.concat(chunks).toString('utf8'),
        accept: req.headers.accept ?? null,
      });
      res.writeHead(200, { 'content-type': 'application/json', 'x-service': 'echo' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
  const upstreams = { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl };
  raw = await startGateway({ label: 'gw_rawfront', upstreams });
  node = await sharingGateway('gw_rawfront_node', { API_FRONT: 'node' });
  key = (await raw.account({ per_minute: 100_000, per_day: 1_000_000 })).key;
});

afterAll(async () => {
  await node.stop();
  await raw.stop();
  service.closeAllConnections();
  await new Promise<void>((resolve) => service.close(() => resolve()));
});

/** Another gateway in front of the same service, sharing the first one's database and Redis. */
const sharingGateway = (label: string, env?: Record<string, string>) =>
  startGateway({
    label,
    upstreams: { signals: serviceUrl, stats: serviceUrl, webhooks: serviceUrl },
    share: { dbName: raw.config.GATEWAY_DB, redisPrefix: raw.config.REDIS_PREFIX },
    env,
  });

const portOf = (g: GatewayHarness) => Number(new URL(g.url).port);

async function frontCounts(): Promise<{ request: number; handoff: number }> {
  const values = (await metrics.rawFront().get()).values;
  const of = (event: string) => values.find((v) => v.labels.event === event)?.value ?? 0;
  return { request: of('request'), handoff: of('handoff') };
}

/** What the raw front did since `before`: requests it served, connections it handed on. */
async function expectFrontCounts(
  before: { request: number; handoff: number },
  expected: { request: number; handoff: number },
): Promise<void> {
  const after = await frontCounts();
  expect({ request: after.request - before.request, handoff: after.handoff - before.handoff }).toEqual(
    expected,
  );
}

const get = (path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\nAccept: application/json\r\n${extra}\r\n`;

/** One GET on a connection of its own. */
async function getOnce(g: GatewayHarness, path: string): Promise<Answer> {
  const client = new RawClient(portOf(g));
  try {
    client.send(get(path));
    return (await client.answers([false]))[0]!;
  } finally {
    client.destroy();
  }
}

/** The answer's headers both fronts should agree on (request ids, dates and counters differ). */
function comparable(a: Answer): unknown {
  const {
    date: _d,
    'x-request-id': _r,
    'x-ratelimit-remaining': _m,
    'x-ratelimit-reset': _s,
    ...rest
  } = a.headers;
  return { status: a.status, headers: rest, body: a.body.replace(/req_[\w-]+/g, 'req'), chunked: a.chunked };
}

async function bothFronts(text: string, heads: boolean[]): Promise<[Answer[], Answer[]]> {
  const results: Answer[][] = [];
  for (const g of [raw, node]) {
    const client = new RawClient(portOf(g));
    try {
      client.send(text);
      results.push(await client.answers(heads));
    } finally {
      client.destroy();
    }
  }
  return [results[0]!, results[1]!];
}

describe('the raw front', () => {
  it('when GETs and a HEAD come one after another on one keep-alive connection, then the raw front answers each on it, as node:http would', async () => {
    const before = await frontCounts();
    const client = new RawClient(portOf(raw));
    const nodeClient = new RawClient(portOf(node));
    try {
      for (const [text, head] of [
        [get('/v1/signals?limit=2'), false],
        [get('/v1/stats/overview'), false],
        [`HEAD /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n\r\n`, true],
        [get('/v1/nothing-here'), false],
        [get('/v1/signals/chunked'), false],
      ] as const) {
        client.send(text);
        nodeClient.send(text);
        const [mine] = await client.answers([head]);
        const [theirs] = await nodeClient.answers([head]);
        expect(comparable(mine!)).toEqual(comparable(theirs!));
        expect(mine!.headers.connection).toBe('keep-alive');
        expect(mine!.headers['keep-alive']).toBe('timeout=65');
        expect(mine!.headers['x-request-id']).toMatch(/^req_/);
        expect(mine!.headers.date).toBe(new Date(Date.parse(mine!.headers.date!)).toUTCString());
      }
      expect(client.closed).toBe(false);
    } finally {
      client.destroy();
      nodeClient.destroy();
    }
    await expectFrontCounts(before, { request: 5, handoff: 0 });
  });

  it('when the service answers chunked or with a large body, then the client gets the same bytes, framed', async () => {
    const [[chunked, big], [nodeChunked, nodeBig]] = await bothFronts(
      get('/v1/signals/chunked') + get('/v1/signals/big'),
      [false, false],
    );
    expect(chunked!.body).toBe('{"parts":[1,2]}');
    expect(chunked!.chunked).toBe(true);
    expect(comparable(chunked!)).toEqual(comparable(nodeChunked!));
    expect(big!.body.length).toBe(1024 * 1024);
    expect(big!.headers['content-length']).toBe(String(1024 * 1024));
    expect(comparable(big!)).toEqual(comparable(nodeBig!));
  });

  it('when a client pipelines requests and reads nothing, then the gateway stops taking them until it reads, and then answers all', async () => {
    // The gateway's own 404s, ~5 KB each (the message names the long path): 4,000 of them are
    // more than the sockets' kernel buffers on loopback hold (~4 MB measured), so only answers
    // kept in the gateway's memory could take them all while the client reads nothing.
    const count = 4000;
    const path = `/v1/nowhere/${'p'.repeat(2000)}`;
    const socket = net.connect({ port: portOf(raw), host: '127.0.0.1' });
    socket.pause();
    const received: Buffer[] = [];
    try {
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      const before = await frontCounts();
      const served = async () => (await frontCounts()).request - before.request;
      socket.write(Array.from({ length: count }, () => get(path)).join(''));
      // Served until the buffers are full, then nothing more while the client still reads nothing.
      let stalled = -1;
      let now = await served();
      const settleBy = Date.now() + 10_000;
      while (now !== stalled && Date.now() < settleBy) {
        stalled = now;
        await new Promise((r) => setTimeout(r, 400));
        now = await served();
      }
      expect(now).toBe(stalled);
      expect(stalled).toBeGreaterThan(0);
      expect(stalled).toBeLessThan(count);
      socket.on('data', (d: Buffer) => received.push(d));
      socket.resume();
      const deadline = Date.now() + 20_000;
      while ((await served()) < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 300));
      const text = Buffer.concat(received).toString('latin1');
      expect(text.split('HTTP/1.1 404 Not Found\r\n').length - 1).toBe(count);
    } finally {
      socket.destroy();
    }
  });

  it('when requests are pipelined in one write, then they are answered in order on the connection', async () => {
    const before = await frontCounts();
    const paths = ['/v1/signals?n=1', '/v1/signals?n=2', '/v1/stats?n=3', '/v1/webhooks?n=4'];
    const [answers] = await bothFronts(paths.map((p) => get(p)).join(''), [false, false, false, false]);
    expect(answers.map((a) => (JSON.parse(a.body) as { path: string }).path)).toEqual(paths);
    expect((await frontCounts()).request - before.request).toBe(4);
  });

  it('when a request the raw front does not take follows raw ones on a connection, then node:http answers it and the rest on that connection', async () => {
    const before = await frontCounts();
    const client = new RawClient(portOf(raw));
    try {
      client.send(get('/v1/signals?first'));
      expect((await client.answers([false]))[0]!.status).toBe(200);
      const body = '{"url":"https://example.com/hook"}';
      client.send(
        `POST /v1/webhooks HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
          get('/v1/signals?after'),
      );
      const [post, after] = await client.answers([false, false]);
      expect(JSON.parse(post!.body)).toMatchObject({ method: 'POST', path: '/v1/webhooks', body });
      expect(JSON.parse(after!.body)).toMatchObject({ method: 'GET', path: '/v1/signals?after' });
    } finally {
      client.destroy();
    }
    await expectFrontCounts(before, { request: 1, handoff: 1 });
  });

  it('when a head arrives in pieces, then node:http reads it and the answer is the same', async () => {
    const client = new RawClient(portOf(raw));
    try {
      const text = get('/v1/signals?split');
      client.send(text.slice(0, 20));
      await new Promise((r) => setTimeout(r, 50));
      client.send(text.slice(20));
      const [answer] = await client.answers([false]);
      expect(JSON.parse(answer!.body)).toMatchObject({ path: '/v1/signals?split' });
    } finally {
      client.destroy();
    }
  });

  it.each([
    [
      'a header line without a colon',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nBroken line\r\n\r\n`,
    ],
    [
      'both Content-Length and Transfer-Encoding (smuggling)',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    ],
    [
      'a GET with a body',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nContent-Length: 5\r\n\r\nhello`,
    ],
    ['HTTP/1.0', `GET /v1/signals HTTP/1.0\r\nHost: gw\r\nAuthorization: Bearer KEY\r\n\r\n`],
    ['no Host', `GET /v1/signals HTTP/1.1\r\nAuthorization: Bearer KEY\r\n\r\n`],
    [
      'a dashboard session cookie and no key',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nCookie: __Host-signal_session=abc\r\n\r\n`,
    ],
    [
      'a folded header line',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nX-A: 1\r\n  2\r\n\r\n`,
    ],
    ['a bare LF line end', `GET /v1/signals HTTP/1.1\r\nHost: gw\nAuthorization: Bearer KEY\r\n\r\n`],
    ['an account route', `GET /v1/account HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\n\r\n`],
    ['the health route', `GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n`],
    [
      'a duplicated Authorization',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nAuthorization: Bearer other\r\n\r\n`,
    ],
    [
      'a byte above ASCII in a header',
      `GET /v1/signals HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer KEY\r\nX-Name: caf\u00e9\r\n\r\n`,
    ],
  ])(
    'when a request has %s, then node:http reads it and both fronts answer alike',
    async (_what, template) => {
      const before = await frontCounts();
      const text = template.replace('KEY', key);
      const [[mine], [theirs]] = await bothFronts(text, [false]);
      expect(mine!.status).toBe(theirs!.status);
      expect(comparable(mine!)).toEqual(comparable(theirs!));
      await expectFrontCounts(before, { request: 0, handoff: 1 });
    },
  );

  it('when a request has no key and no cookie, then the raw front answers the 401 node:http would', async () => {
    const before = await frontCounts();
    const [[mine], [theirs]] = await bothFronts('GET /v1/signals HTTP/1.1\r\nHost: gw\r\n\r\n', [false]);
    expect(mine!.status).toBe(401);
    expect(comparable(mine!)).toEqual(comparable(theirs!));
    await expectFrontCounts(before, { request: 1, handoff: 0 });
  });

  it('when the client asks to close, then the answer says so and the connection closes after it', async () => {
    const client = new RawClient(portOf(raw));
    try {
      client.send(get('/v1/signals?bye', 'Connection: close\r\n'));
      const [answer] = await client.answers([false]);
      expect(answer!.status).toBe(200);
      expect(answer!.headers.connection).toBe('close');
      expect(await client.untilClosed()).toBe(true);
    } finally {
      client.destroy();
    }
  });

  it('when the client leaves before the service answers, then the service request is cut too and the gateway goes on serving', async () => {
    const client = new RawClient(portOf(raw));
    client.send(get('/v1/signals/slow?gone'));
    await new Promise((r) => setTimeout(r, 200));
    client.destroy();
    const deadline = Date.now() + 1500;
    while (!slowClosed.includes('/v1/signals/slow?gone') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(slowClosed).toContain('/v1/signals/slow?gone');
    expect((await getOnce(raw, '/v1/signals?next')).status).toBe(200);
  });

  it('when the gateway stops, then idle raw connections are closed and the stop does not wait out its grace', async () => {
    const extra = await sharingGateway('gw_rawfront_stop');
    const client = new RawClient(portOf(extra));
    try {
      client.send(get('/v1/signals?idle'));
      expect((await client.answers([false]))[0]!.status).toBe(200);
      const started = Date.now();
      await extra.stop();
      expect(Date.now() - started).toBeLessThan(4000);
      expect(await client.untilClosed(1000)).toBe(true);
    } finally {
      client.destroy();
    }
  });

  it('when tracing is configured, then node:http reads every request (its instrumentation makes the spans)', async () => {
    const traced = await sharingGateway('gw_rawfront_traced', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    });
    const before = await frontCounts();
    try {
      expect((await getOnce(traced, '/v1/signals?traced')).status).toBe(200);
    } finally {
      await traced.stop();
    }
    expect(await frontCounts()).toEqual(before);
  });

  it('when generated request heads, plain and odd, go to both fronts, then both answer each with the same status and body', async () => {
    const plain: Array<() => string> = [
      () => `Authorization: Bearer ${key}`,
      () => 'Authorization: Bearer sk_live_nope',
      () => 'Accept: application/json',
      () => 'Accept:application/json',
      () => 'Accept-Encoding: \tgzip ',
      () => 'X-Forwarded-For: 203.0.113.9',
      () => 'X-Request-Id: req_fuzz-1',
      () => 'X-Request-Id: bad id with spaces',
      () => 'Cookie: theme=dark',
      () => 'User-Agent: fuzz/1.0',
      () => 'X-Empty:',
      () => 'X-Tab: a\tb',
      () => 'Content-Length: 0',
    ];
    const odd: Array<() => string> = [
      () => 'Cookie: __Host-signal_session=abc',
      () => 'Connection: Upgrade',
      () => 'Expect: 100-continue',
      () => 'Broken header line',
      () => ' folded: continuation',
      () => 'Transfer-Encoding: chunked',
      () => 'X-Name: caf\u00e9',
      () => `Authorization: Bearer ${key}`,
    ];
    const requestHead = fc.record({
      method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'DELETE', 'get'),
      target: fc.constantFrom(
        '/v1/signals',
        '/v1/signals?limit=1',
        '/v1/stats',
        '/v1/webhooks',
        '/v1/nowhere',
        '/v1/account',
        '/v1',
        '/healthz',
        '/v1/signals/%2e%2e/account',
        '/v1/signals?q=%00',
        '/V1/SIGNALS',
      ),
      version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0'),
      host: fc.constantFrom(true, true, true, true, false),
      headers: fc.uniqueArray(fc.integer({ min: 0, max: plain.length - 1 }), { maxLength: 5 }),
      odd: fc.oneof(
        { arbitrary: fc.constant(undefined), weight: 2 },
        { arbitrary: fc.integer({ min: 0, max: odd.length - 1 }), weight: 1 },
      ),
      lineEnd: fc.constantFrom('\r\n', '\r\n', '\r\n', '\r\n', '\n'),
    });
    const before = await frontCounts();
    await fc.assert(
      fc.asyncProperty(requestHead, async (r) => {
        const lines = [`${r.method} ${r.target} ${r.version}`];
        if (r.host) lines.push('Host: gw');
        for (const i of r.headers) lines.push(plain[i]!());
        if (r.odd !== undefined) lines.push(odd[r.odd]!());
        // One request per connection: the client closes after it, so every answer ends.
        lines.push('Connection: close');
        // A chunked head needs its (empty) body, or node:http waits for it and nothing answers.
        const body = r.odd !== undefined && odd[r.odd]!().startsWith('Transfer-Encoding') ? '0\r\n\r\n' : '';
        const text = lines.join(r.lineEnd) + r.lineEnd + r.lineEnd + body;
        const [[mine], [theirs]] = await bothFronts(text, [r.method === 'HEAD']);
        expect({ text, ...(comparable(mine!) as object) }).toMatchObject({
          text,
          status: theirs!.status,
          body: theirs!.body.replace(/req_[\w-]+/g, 'req'),
        });
      }),
      { numRuns: 150 },
    );
    // Both kinds were generated: heads the raw front served and heads it handed on.
    const after = await frontCounts();
    expect(after.request - before.request).toBeGreaterThanOrEqual(5);
    expect(after.handoff - before.handoff).toBeGreaterThanOrEqual(5);
  });
});

describe('the raw front on its own', () => {
  it('when a keep-alive connection idles past keepAliveMs, then it is closed; an answer taking longer than that is not cut', async () => {
    const front = new RawFront({
      keepAliveMs: 300,
      takes: () => true,
      serve: (request, answer) => {
        const reply = () => {
          answer.writeHead(200, ['Content-Type', 'text/plain', 'Content-Length', '2']);
          answer.end('ok');
        };
        if (request.url === '/v1/slow') setTimeout(reply, 700);
        else reply();
      },
    });
    const server = net.createServer((socket) => front.take(socket, (s) => s.destroy()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const client = new RawClient(port);
    try {
      const plain = (path: string) => `GET ${path} HTTP/1.1\r\nHost: gw\r\n\r\n`;
      client.send(plain('/v1/slow'));
      expect((await client.answers([false]))[0]).toMatchObject({ status: 200, body: 'ok' });
      // Taken again within keepAliveMs of the last answer, several times over: still open.
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 200));
        client.send(plain('/v1/fast'));
        expect((await client.answers([false]))[0]).toMatchObject({ status: 200, body: 'ok' });
      }
      expect(client.closed).toBe(false);
      expect(await client.untilClosed(1000)).toBe(true);
    } finally {
      client.destroy();
      front.closeAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
