import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  isBodilessRequest,
  LeadingLines,
  parseAnswerHead,
  RawUpstreamPool,
  type AnswerHandler,
  type UpstreamError,
} from '../src/http/raw-upstream';

/**
 * The gateway's raw client for GET and HEAD, against services on loopback that answer with
 * exactly the bytes each test writes (framing, keep-alive, faults).
 */

interface Scripted {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  /** Request heads received, in order. */
  heads: string[];
  /** How many whole request heads each read brought (reads that completed none left out). */
  headsPerRead: number[];
  close(): Promise<void>;
}

/** A service whose answer to the n-th request (0-based, over all connections) is `answer(n, socket, head)`. */
async function scripted(answer: (n: number, socket: net.Socket, head: string) => void): Promise<Scripted> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0, heads: [] as string[], headsPerRead: [] as number[] };
  const server = net.createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      let heads = 0;
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        state.heads.push(buf.slice(0, end));
        buf = buf.slice(end + 4);
        heads += 1;
        answer(state.heads.length - 1, socket, state.heads[state.heads.length - 1]!);
      }
      if (heads > 0) state.headsPerRead.push(heads);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    heads: state.heads,
    headsPerRead: state.headsPerRead,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

interface Answer {
  status: number;
  headers: string[];
  body: string;
}

/** One request through the pool, as a promise of the whole answer (or the error). */
function get(
  pool: RawUpstreamPool,
  options: {
    method?: 'GET' | 'HEAD';
    path?: string;
    timeoutMs?: number;
    onData?: AnswerHandler['onData'];
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let status = 0;
    let headers: string[] = [];
    const chunks: Buffer[] = [];
    pool.request(
      {
        method: options.method ?? 'GET',
        path: options.path ?? '/v1/signals',
        headers: ['accept', 'application/json', 'x-request-id', 'req_1'],
        timeoutMs: options.timeoutMs ?? 2000,
      },
      {
        onStart(s, h) {
          status = s;
          headers = h;
        },
        onData(chunk) {
          chunks.push(Buffer.from(chunk));
          return options.onData ? options.onData(chunk) : true;
        },
        onEnd: () => resolve({ status, headers, body: Buffer.concat(chunks).toString('utf8') }),
        onError: (err: UpstreamError) => reject(err),
      },
    );
  });
}

const json = (body: string, extra = '') =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

const poolFor = (s: Scripted, connections = 4, idleMs = 5000, pipelining = 1) =>
  RawUpstreamPool.forOrigin(`http://127.0.0.1:${s.port}`, {
    connections,
    pipelining,
    idleMs,
    connectTimeoutMs: 1000,
  });

/** What a test opened (scripted services, pools), closed after it, last first. */
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});
const track = <T extends { close(): Promise<void> }>(o: T): T => {
  open.push(o);
  return o;
};

describe('the raw upstream client', () => {
  it('when answers carry Content-Length, then each arrives whole and the next request reuses the connection', async () => {
    const svc = track(await scripted((n, socket) => socket.write(json(`{"n":${n}}`))));
    const pool = track(poolFor(svc));
    const first = await get(pool, { path: '/v1/signals?limit=1' });
    const second = await get(pool);
    expect([first.status, first.body, second.body]).toEqual([200, '{"n":0}', '{"n":1}']);
    expect(first.headers).toEqual(['content-type', 'application/json', 'content-length', '7']);
    expect(svc.connections).toBe(1);
    expect(svc.heads[0]).toBe(
      `GET /v1/signals?limit=1 HTTP/1.1\r\nhost: 127.0.0.1:${svc.port}\r\naccept: application/json\r\nx-request-id: req_1`,
    );
  });

  it('when an answer is chunked in odd pieces, then the body is decoded, trailers dropped and the connection reused', async () => {
    const svc = track(
      await scripted((n, socket) => {
        const wire = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: t\r\n\r\n`;
        // Written a few bytes at a time: the framing must hold across any split.
        let at = 0;
        const step = () => {
          if (at >= wire.length) return;
          socket.write(wire.slice(at, at + 3 + n));
          at += 3 + n;
          setImmediate(step);
        };
        step();
      }),
    );
    const pool = track(poolFor(svc));
    expect((await get(pool)).body).toBe('hello, world');
    expect((await get(pool)).body).toBe('hello, world');
    expect(svc.connections).toBe(1);
  });

  it('when HEAD is answered with a Content-Length and no body, then the answer ends at its head', async () => {
    const svc = track(
      await scripted((n, socket) =>
        socket.write(n === 0 ? 'HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n' : json('{}')),
      ),
    );
    const pool = track(poolFor(svc));
    const head = await get(pool, { method: 'HEAD' });
    expect([head.status, head.body]).toEqual([200, '']);
    expect((await get(pool)).body).toBe('{}');
    expect(svc.connections).toBe(1);
  });

  it('when an answer has no length, then it runs to the connection end and the connection is not reused', async () => {
    const svc = track(
      await scripted((_n, socket) => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ');
        setTimeout(() => socket.end('the end'), 20);
      }),
    );
    const pool = track(poolFor(svc));
    expect((await get(pool)).body).toBe('until the end');
    expect((await get(pool)).body).toBe('until the end');
    expect(svc.connections).toBe(2);
  });

  it('when the service closes a kept-alive connection as the next request arrives, then that request is sent once more on a new one', async () => {
    const svc = track(
      await scripted((n, socket) => {
        if (n === 1) socket.destroy();
        else socket.write(json(`{"n":${n}}`));
      }),
    );
    const pool = track(poolFor(svc));
    expect((await get(pool)).body).toBe('{"n":0}');
    expect((await get(pool)).body).toBe('{"n":2}');
    expect(svc.connections).toBe(2);
  });

  it('when a fresh connection is closed before any answer, then the error says so (no second try)', async () => {
    const svc = track(await scripted((_n, socket) => socket.destroy()));
    const pool = track(poolFor(svc));
    await expect(get(pool)).rejects.toMatchObject({ code: 'UPSTREAM_CLOSED' });
    expect(svc.heads).toHaveLength(1);
  });

  it('when the service does not answer in time, then UPSTREAM_HEADERS_TIMEOUT; when it stalls mid-body, then UPSTREAM_BODY_TIMEOUT', async () => {
    const svc = track(
      await scripted((n, socket) => {
        if (n === 1) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf');
      }),
    );
    const pool = track(poolFor(svc));
    await expect(get(pool, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'UPSTREAM_HEADERS_TIMEOUT' });
    await expect(get(pool, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'UPSTREAM_BODY_TIMEOUT' });
  });

  it('when an exchange on a connection ends in time, then its deadline does not fail the next one; a later stall still times out', async () => {
    const svc = track(
      await scripted((n, socket) => {
        // The second request is answered after 150 ms: past the first one's deadline, within its own.
        if (n === 0 || n === 2) socket.write(json('{"n":1}'));
        else if (n === 1) setTimeout(() => socket.write(json('{"n":2}')), 150);
      }),
    );
    const pool = track(poolFor(svc, 1));
    await expect(get(pool, { timeoutMs: 200 })).resolves.toMatchObject({ status: 200 });
    await sleep(100);
    await expect(get(pool, { timeoutMs: 200 })).resolves.toMatchObject({ body: '{"n":2}' });
    await expect(get(pool, { timeoutMs: 200 })).resolves.toMatchObject({ body: '{"n":1}' });
    // The connection's timer fires with nothing waiting while it is idle; the next exchange arms it again.
    await sleep(300);
    await expect(get(pool, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'UPSTREAM_HEADERS_TIMEOUT' });
    // All four on one connection: no deadline cut it early.
    expect(svc.connections).toBe(1);
  });

  it('when a connection idles past idleMs, then it is closed; one taken again before that stays open', async () => {
    const svc = track(await scripted((_n, socket) => socket.write(json('{}'))));
    const pool = track(poolFor(svc, 1, 300));
    await get(pool);
    await sleep(200);
    await get(pool); // the idle time starts again from here
    await sleep(200);
    await get(pool);
    expect(svc.connections).toBe(1);
    await sleep(500);
    await get(pool);
    expect(svc.connections).toBe(2);
  });

  it('when a service starts its answers with the same lines, then they are parsed once and every answer reads as a full parse would', () => {
    const answer = (id: number, first = 'x-frame-options: DENY') =>
      Buffer.from(
        `HTTP/1.1 ${id % 2 ? 404 : 200} X\r\n${first}\r\ncontent-security-policy: default-src 'none'\r\n` +
          `x-request-id: req_${id}\r\ncontent-type: application/json\r\ncontent-length: ${id}\r\nconnection: keep-alive`,
        'latin1',
      );
    const leading = new LeadingLines();
    const heads = [
      answer(1),
      answer(2),
      answer(3),
      answer(4, 'X-Frame-Options: SAMEORIGIN'),
      answer(5),
      answer(6),
    ];
    for (const head of heads)
      expect(parseAnswerHead(head, 'GET', leading)).toEqual(parseAnswerHead(head, 'GET'));
    // What was learnt: the two lines every answer starts with, nothing after (the id differs).
    expect(leading.headers).toEqual([
      'x-frame-options',
      'DENY',
      'content-security-policy',
      "default-src 'none'",
    ]);
    // A learnt line is never taken for a different one that starts the same way.
    const longer = answer(7, 'x-frame-options: DENY, x-evil');
    expect(parseAnswerHead(longer, 'GET', leading)).toEqual(parseAnswerHead(longer, 'GET'));
  });

  it("when answers start with framing lines, then none of them is learnt: each answer's length is its own", () => {
    const leading = new LeadingLines();
    const answer = (length: number) =>
      Buffer.from(
        `HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\nconnection: keep-alive\r\nx-a: 1`,
        'latin1',
      );
    for (const length of [5, 5, 5, 9]) {
      const parsed = parseAnswerHead(answer(length), 'GET', leading);
      expect(typeof parsed !== 'string' && parsed.framing).toEqual({ kind: 'length', remaining: length });
    }
    expect(leading.headers).toEqual([]);
  });

  it('when nothing listens, then UPSTREAM_CONNECT_FAILED', async () => {
    const svc = await scripted(() => undefined);
    const port = svc.port;
    await svc.close();
    const pool = track(
      RawUpstreamPool.forOrigin(`http://127.0.0.1:${port}`, {
        connections: 2,
        idleMs: 1000,
        connectTimeoutMs: 500,
      }),
    );
    await expect(get(pool)).rejects.toMatchObject({ code: 'UPSTREAM_CONNECT_FAILED' });
  });

  it.each([
    ['a bad status line', 'HTTP/2 200 OK\r\n\r\n'],
    ['two different lengths', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nab'],
    ['a length that is not a number', 'HTTP/1.1 200 OK\r\ncontent-length: 2x\r\n\r\nab'],
    ['a coding other than chunked', 'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nab'],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n'],
    ['an informational answer', 'HTTP/1.1 100 Continue\r\n\r\n'],
    ['a control character in a header value', 'HTTP/1.1 200 OK\r\nx-a: 1\x01\r\ncontent-length: 0\r\n\r\n'],
    ['a header name that is not a token', 'HTTP/1.1 200 OK\r\nx a: 1\r\ncontent-length: 0\r\n\r\n'],
  ])('when the answer has %s, then UPSTREAM_PROTOCOL_ERROR', async (_what, wire) => {
    const svc = track(await scripted((_n, socket) => socket.write(wire)));
    const pool = track(poolFor(svc));
    await expect(get(pool)).rejects.toMatchObject({ code: 'UPSTREAM_PROTOCOL_ERROR' });
  });

  it('when the handler cannot take the answer (Node refuses to write a header), then UPSTREAM_PROTOCOL_ERROR, not a crash', async () => {
    const svc = track(await scripted((_n, socket) => socket.write(json('{}'))));
    const pool = track(poolFor(svc));
    const outcome = await new Promise<string>((resolve) => {
      pool.request(
        { method: 'GET', path: '/', headers: [], timeoutMs: 2000 },
        {
          onStart: () => {
            throw new TypeError('Invalid character in header content');
          },
          onData: () => true,
          onEnd: () => resolve('ended'),
          onError: (err) => resolve(err.code),
        },
      );
    });
    expect(outcome).toBe('UPSTREAM_PROTOCOL_ERROR');
  });

  it('when more requests arrive than connections are allowed, then they wait their turn and all are answered', async () => {
    const svc = track(await scripted((n, socket) => setTimeout(() => socket.write(json(`{"n":${n}}`)), 5)));
    const pool = track(poolFor(svc, 3));
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(pool)));
    expect(new Set(answers.map((a) => a.body)).size).toBe(20);
    expect(svc.connections).toBe(3);
  });

  it('when the client goes away mid-answer, then the handler hears UPSTREAM_ABORTED and the next request gets a clean connection', async () => {
    const svc = track(
      await scripted((n, socket) => {
        if (n === 0) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart');
        else socket.write(json('{"ok":true}'));
      }),
    );
    const pool = track(poolFor(svc));
    const aborted = new Promise<string>((resolve) => {
      const exchange = pool.request(
        { method: 'GET', path: '/', headers: [], timeoutMs: 2000 },
        {
          onStart: () => undefined,
          onData: () => {
            setImmediate(() => exchange.abort());
            return true;
          },
          onEnd: () => resolve('ended'),
          onError: (err) => resolve(err.code),
        },
      );
    });
    expect(await aborted).toBe('UPSTREAM_ABORTED');
    expect((await get(pool)).body).toBe('{"ok":true}');
    expect(svc.connections).toBe(2);
  });

  it('when the client takes no more for a while, then the body still arrives whole once it resumes', async () => {
    const big = 'x'.repeat(256 * 1024);
    const svc = track(await scripted((_n, socket) => socket.write(json(big))));
    const pool = track(poolFor(svc));
    let paused = 0;
    const answer = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const exchange = pool.request(
        { method: 'GET', path: '/', headers: [], timeoutMs: 2000 },
        {
          onStart: () => undefined,
          onData(chunk) {
            chunks.push(Buffer.from(chunk));
            paused += 1;
            setTimeout(() => exchange.resume(), 2);
            return false;
          },
          onEnd: () => resolve(Buffer.concat(chunks).toString()),
          onError: reject,
        },
      );
    });
    expect(answer).toBe(big);
    expect(paused).toBeGreaterThan(0);
  });
});

describe('the raw upstream client, pipelining', () => {
  /** The path a request head asked for. */
  const pathOf = (head: string) => head.split(' ')[1]!;
  /** An answer that carries the path it answers (so one given to the wrong request shows). */
  const echo = (socket: net.Socket, head: string) => {
    if (!socket.writableEnded) socket.write(json(JSON.stringify({ path: pathOf(head) })));
  };

  it("when a turn's requests outnumber what one connection carries, then they go out packed, several in one write, and each gets its own answer", async () => {
    const svc = track(await scripted((_n, socket, head) => echo(socket, head)));
    const pool = track(poolFor(svc, 4, 5000, 4));
    const paths = Array.from({ length: 8 }, (_, i) => `/v1/signals/sig_${i}`);
    const answers = await Promise.all(paths.map((path) => get(pool, { path })));
    expect(answers.map((a) => JSON.parse(a.body).path)).toEqual(paths);
    // Four per connection: two connections (one at a time would have taken all four).
    expect(svc.connections).toBe(2);
    expect(svc.headsPerRead).toEqual([4, 4]);
    // The next turn's lone request takes a connection that is idle again.
    expect(JSON.parse((await get(pool, { path: '/again' })).body).path).toBe('/again');
    expect(svc.connections).toBe(2);
  });

  it('when one request comes in a turn, then it goes alone on an idle connection (nothing waits behind another)', async () => {
    const held: Array<() => void> = [];
    const svc = track(
      await scripted((n, socket, head) => {
        // The first answer waits until the second request has its own.
        if (n === 0) held.push(() => echo(socket, head));
        else {
          echo(socket, head);
          for (const answer of held.splice(0)) answer();
        }
      }),
    );
    const pool = track(poolFor(svc, 4, 5000, 4));
    const first = get(pool, { path: '/first' });
    await sleep(20);
    const second = await get(pool, { path: '/second' });
    expect(JSON.parse(second.body).path).toBe('/second');
    expect(JSON.parse((await first).body).path).toBe('/first');
    expect(svc.connections).toBe(2);
  });

  it('when the service ends the connection after the first of several pipelined answers, then those behind it are sent again once, each on a new connection', async () => {
    const svc = track(
      await scripted((n, socket, head) => {
        if (n === 0) socket.end(json(JSON.stringify({ path: pathOf(head) })));
        else echo(socket, head);
      }),
    );
    const pool = track(poolFor(svc, 4, 5000, 4));
    const paths = ['/a', '/b', '/c', '/d'];
    const answers = await Promise.all(paths.map((path) => get(pool, { path })));
    expect(answers.map((a) => JSON.parse(a.body).path)).toEqual(paths);
    const sent = svc.heads.map(pathOf);
    expect(sent.slice(0, 4)).toEqual(paths);
    expect(sent.slice(4).sort()).toEqual(['/b', '/c', '/d']);
    expect(svc.connections).toBe(4);
  });

  it('when the request before a pipelined one gets no answer in time, then it fails with the timeout and the one behind it is answered on a new connection', async () => {
    const svc = track(
      await scripted((n, socket, head) => {
        if (n >= 2) echo(socket, head);
      }),
    );
    const pool = track(poolFor(svc, 4, 5000, 4));
    const [stalled, behind] = await Promise.allSettled([
      get(pool, { path: '/stalled', timeoutMs: 150 }),
      get(pool, { path: '/behind', timeoutMs: 150 }),
    ]);
    expect(stalled).toMatchObject({ status: 'rejected', reason: { code: 'UPSTREAM_HEADERS_TIMEOUT' } });
    expect(behind.status === 'fulfilled' && JSON.parse(behind.value.body).path).toBe('/behind');
    expect(svc.connections).toBe(2);
  });

  it("when a pipelined request's client goes away, then its answer is read and dropped and the connection carries on with the others", async () => {
    const svc = track(await scripted((_n, socket, head) => setTimeout(() => echo(socket, head), 30)));
    const pool = track(poolFor(svc, 4, 5000, 4));
    const outcomes: string[] = [];
    const handler = (label: string): AnswerHandler => ({
      onStart: () => outcomes.push(`${label} start`),
      onData: () => true,
      onEnd: () => outcomes.push(`${label} end`),
      onError: (err) => outcomes.push(`${label} ${err.code}`),
    });
    const request = (path: string) => ({ method: 'GET' as const, path, headers: [], timeoutMs: 2000 });
    pool.request(request('/1'), handler('1'));
    const second = pool.request(request('/2'), handler('2'));
    const third = new Promise<void>((resolve) =>
      pool.request(request('/3'), { ...handler('3'), onEnd: () => resolve(void outcomes.push('3 end')) }),
    );
    await sleep(10); // sent, not answered yet
    second.abort();
    await third;
    expect(outcomes).toEqual(['2 UPSTREAM_ABORTED', '1 start', '1 end', '3 start', '3 end']);
    expect(svc.connections).toBe(1);
    // The connection is still in step: the next request on it gets its own answer.
    expect(JSON.parse((await get(pool, { path: '/4' })).body).path).toBe('/4');
    expect(svc.connections).toBe(1);
  });
});

describe('what the raw client takes', () => {
  it('when a request is GET or HEAD without control characters, then it takes it; anything else goes to undici', () => {
    expect(isBodilessRequest('GET', '/v1/signals?limit=1', ['accept', '*/*'])).toBe(true);
    expect(isBodilessRequest('HEAD', '/v1/stats', [])).toBe(true);
    expect(isBodilessRequest('POST', '/v1/webhooks', [])).toBe(false);
    expect(isBodilessRequest('GET', '/v1/a b', [])).toBe(false);
    expect(isBodilessRequest('GET', '/v1/x', ['user-agent', 'a\r\nx-evil: 1'])).toBe(false);
  });

  it('when a head names connection close or both framings, then the connection is not kept', () => {
    const closing = parseAnswerHead(
      Buffer.from('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1'),
      'GET',
    );
    expect(typeof closing !== 'string' && closing.keepAlive).toBe(false);
    const both = parseAnswerHead(
      Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked'),
      'GET',
    );
    expect(typeof both !== 'string' && [both.keepAlive, both.framing.kind]).toEqual([false, 'chunked']);
    const old = parseAnswerHead(Buffer.from('HTTP/1.0 200 OK\r\ncontent-length: 1'), 'GET');
    expect(typeof old !== 'string' && old.keepAlive).toBe(false);
  });
});
