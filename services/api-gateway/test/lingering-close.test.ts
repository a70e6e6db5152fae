import { connect } from 'node:net';
import request from 'supertest';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * A client that sends a large body without `Expect: 100-continue` writes it while the gateway
 * already refuses it: the gateway answers, half-closes and reads the rest of the body (up to a
 * bound) before it closes, so the client reads the refusal instead of a reset.
 */
let gw: GatewayHarness;
const nowhere = 'http://127.0.0.1:9';

beforeAll(async () => {
  gw = await startGateway({
    label: 'gw_linger',
    upstreams: { signals: nowhere, stats: nowhere, webhooks: nowhere },
  });
});
afterAll(() => gw.stop());

interface Exchange {
  response: string;
  /** The socket error the client saw, if any (EPIPE, ECONNRESET). */
  error?: string;
  /** The server ended the connection with a FIN (not a reset). */
  ended: boolean;
  /** Body bytes the client's socket took before it closed. */
  written: number;
}

/**
 * Writes the head and `bodyBytes` of body as fast as the socket takes them, without waiting for a
 * response; `chunked`: in 64 KiB chunks of chunked transfer coding (the head says so), unended.
 */
function sendWithoutWaiting(head: string, bodyBytes: number, chunked = false): Promise<Exchange> {
  return new Promise((resolve) => {
    const url = new URL(gw.url);
    // Half-open: the client goes on writing its body after the gateway's FIN, as clients that
    // send the whole body before reading do.
    const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
    let response = '';
    let error: string | undefined;
    let ended = false;
    let written = 0;
    let open = true;
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const framed = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from('\r\n'),
    ]);
    const pump = () => {
      while (open && written < bodyBytes) {
        const part = chunked ? framed : chunk.subarray(0, Math.min(chunk.length, bodyBytes - written));
        written += chunked ? chunk.length : part.length;
        if (!socket.write(part)) {
          socket.once('drain', pump);
          return;
        }
      }
      if (open) socket.end();
    };
    socket.on('data', (data: Buffer) => (response += data.toString('latin1')));
    socket.on('end', () => (ended = true));
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => {
      open = false;
      resolve({ response, error, ended, written });
    });
    socket.write(head);
    pump();
  });
}

/**
 * More than the kernel's loopback buffers take (about 4 MB here), so the client is still writing
 * when the gateway answers, as one on a real network is with 2 MB; less than the bound.
 */
const BODY = 12_000_000;

const post = (path: string, headers: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n${headers}Content-Length: ${length}\r\n\r\n`;

describe('a refused body gets its response, not a reset', () => {
  it('when a 12 MB body is sent without waiting to a route that takes 64 KiB, then the client reads the 413 and the connection ends cleanly after the body', async () => {
    const { key } = await gw.account();
    for (let i = 0; i < 5; i++) {
      const size = BODY;
      const x = await sendWithoutWaiting(post('/v1/signals', `Authorization: Bearer ${key}\r\n`, size), size);
      expect(x.response).toMatch(/^HTTP\/1\.1 413 /);
      expect(x.response).toMatch(/\r\nConnection: close\r\n/i);
      expect(x.response).toContain('"code":"PAYLOAD_TOO_LARGE"');
      expect(x).toMatchObject({ error: undefined, ended: true, written: size });
    }
  });

  it('when a 12 MB body without a key is sent without waiting, then the client reads the 401 and no reset', async () => {
    const size = BODY;
    const x = await sendWithoutWaiting(post('/v1/webhooks', '', size), size);
    expect(x.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(x).toMatchObject({ error: undefined, ended: true, written: size });
  });

  /** A dashboard session's cookie and CSRF token. */
  async function session(): Promise<{ cookie: string; csrf: string }> {
    const { email } = await gw.account(undefined, 'a long enough password');
    const login = await request(gw.url)
      .post('/v1/dashboard/session')
      .send({ email, password: 'a long enough password' })
      .expect(200);
    const cookie = ([] as string[])
      .concat(login.headers['set-cookie'] ?? [])
      .find((c) => c.startsWith('__Host-signal_session='))!
      .split(';')[0]!;
    return { cookie, csrf: String(login.body.data.csrf_token) };
  }

  it('when a dashboard session sends a 12 MB body to a service route, then the client reads the 413 and no reset', async () => {
    const { cookie, csrf } = await session();
    const size = BODY;
    const x = await sendWithoutWaiting(
      post('/v1/webhooks', `Cookie: ${cookie}\r\nX-CSRF-Token: ${csrf}\r\n`, size),
      size,
    );
    expect(x.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(x).toMatchObject({ error: undefined, ended: true, written: size });
  });

  it("when a 12 MB body is sent without waiting to the gateway's own route (login), then the client reads the 413 with Connection: close and the connection ends cleanly", async () => {
    // body-parser alone reads a refused body to its end and answers keeping the connection.
    const x = await sendWithoutWaiting(post('/v1/auth/login', '', BODY), BODY);
    expect(x.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(x.response).toMatch(/\r\nConnection: close\r\n/i);
    expect(x.response).toContain('"code":"PAYLOAD_TOO_LARGE"');
    expect(x.response).toContain('(16 KiB)');
    expect(x).toMatchObject({ error: undefined, ended: true, written: BODY });
  });

  it("when an upload to the gateway's own route asks Expect: 100-continue with a length past its limit, then it gets the 413 and no invitation", async () => {
    const x = await sendWithoutWaiting(post('/v1/dashboard/signup', 'Expect: 100-continue\r\n', BODY), 0);
    expect(x.response).not.toContain('100 Continue');
    expect(x.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(x.response).toMatch(/\r\nConnection: close\r\n/i);
  });

  it("when a body of another type is sent to the gateway's own route, then the 415 ends the connection", async () => {
    const head = `POST /v1/account/keys HTTP/1.1\r\nHost: gw\r\nContent-Type: text/plain\r\nContent-Length: ${BODY}\r\n\r\n`;
    const x = await sendWithoutWaiting(head, BODY);
    expect(x.response).toMatch(/^HTTP\/1\.1 415 /);
    expect(x.response).toMatch(/\r\nConnection: close\r\n/i);
    expect(x).toMatchObject({ error: undefined, ended: true });
  });

  it("when a chunked body to the gateway's own route goes on past its limit and the bound, then the connection is cut before the body ends", async () => {
    // Without a declared length nothing is refused on the head: the limit is found by reading.
    const size = 256 * 1024 * 1024;
    const head =
      'POST /v1/auth/login HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const x = await sendWithoutWaiting(head, size, true);
    expect(x.written).toBeLessThan(size);
  });

  it("when a dashboard session sends a 20 KB body to a service route, then it is not refused for the gateway's own 16 KiB limit", async () => {
    const { cookie, csrf } = await session();
    const res = await request(gw.url)
      .post('/v1/webhooks')
      .set('Cookie', cookie)
      .set('X-CSRF-Token', csrf)
      .send({ url: 'https://example.com/hook', events: ['signal.new'], description: 'x'.repeat(20_000) });
    // The relay takes it to the service (unreachable here): anything but a 413 from the edge.
    expect(res.status).toBe(503);
  });

  it('when the body goes on past the bound, then the client has read the 413 and the connection is cut before the body ends', async () => {
    const { key } = await gw.account();
    const size = 256 * 1024 * 1024;
    const x = await sendWithoutWaiting(post('/v1/signals', `Authorization: Bearer ${key}\r\n`, size), size);
    expect(x.response).toMatch(/^HTTP\/1\.1 413 /);
    expect(x.written).toBeLessThan(size);
  });
});
