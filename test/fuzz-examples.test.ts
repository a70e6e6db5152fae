import { errorEnvelopeSchema } from '@signal/contracts';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { Client, request } from 'undici';
import type { SystemHarness } from '../services/api-gateway/test/system-harness';
import { NO_RESPONSE_AFTER_MS, fuzzSuite, type Seeded } from './fuzz-harness';

/**
 * What the fuzz of the whole system (fuzz.test.ts, fuzz-harness.ts) found, pinned as plain
 * examples against a system of their own.
 */
describe('fuzzing the whole system through the gateway', () => {
  let sys: SystemHarness;
  let seeded: Seeded;
  const fuzz = fuzzSuite('fuzzex');
  beforeAll(() => {
    ({ sys, seeded } = fuzz.started());
  });

  // What the fuzz found, pinned as plain examples.
  it('when a service refuses a large upload before reading it, then the next request on the same connection still gets a response', async () => {
    const client = new Client(sys.gw.url, { pipelining: 1 });
    try {
      const refused = await client.request({
        path: '/v1/webhooks',
        method: 'POST',
        headers: { authorization: `Bearer ${seeded.keys[0]}`, 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(600_000, 0x7b),
        headersTimeout: NO_RESPONSE_AFTER_MS,
      });
      expect(refused.statusCode).toBe(415);
      await refused.body.text();
      const next = await client.request({
        path: '/v1/signals?limit=1',
        method: 'GET',
        headers: { authorization: `Bearer ${seeded.keys[0]}` },
        headersTimeout: NO_RESPONSE_AFTER_MS,
      });
      expect(next.statusCode).toBe(200);
      await next.body.text();
    } finally {
      await client.destroy();
    }
  });

  it('when the request line is not valid HTTP, then the response is still the error envelope', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const { port } = new URL(sys.gw.url);
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /v1/signals?since=a b HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head = '', body = ''] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/content-type: application\/json/i);
    const requestId = /x-request-id: (\S+)/i.exec(head)?.[1];
    expect(errorEnvelopeSchema.parse(JSON.parse(body))).toMatchObject({
      error: { code: 'VALIDATION_ERROR', request_id: requestId },
    });
  });

  it('when a body does not inflate under its Content-Encoding, then 400 VALIDATION_ERROR, not 500', async () => {
    const res = await request(`${sys.gw.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: '{"email":"a@b.c","password":"x"}',
    });
    expect(res.statusCode).toBe(400);
    expect(errorEnvelopeSchema.parse(await res.body.json()).error.code).toBe('VALIDATION_ERROR');
  });

  it('when a body comes in each coding the docs name, then it is read; another coding is 415', async () => {
    const json = Buffer.from('{}');
    const codings: Array<[string, Buffer]> = [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['br', brotliCompressSync(json)],
      ['zstd', zstdCompressSync(json)],
    ];
    for (const [coding, body] of codings) {
      const res = await request(`${sys.gw.url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': coding },
        body,
      });
      // Read and parsed: the empty object lacks its fields (no credential was tried).
      expect([coding, res.statusCode]).toEqual([coding, 400]);
      expect(errorEnvelopeSchema.parse(await res.body.json()).error.message).toContain('email is required');
    }
    const other = await request(`${sys.gw.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'compress' },
      body: json,
    });
    expect(other.statusCode).toBe(415);
    expect(errorEnvelopeSchema.parse(await other.body.json()).error).toMatchObject({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message:
        'Content-Encoding "compress" is not supported: send the body as is, or gzip, deflate, br or zstd.',
    });
  });

  it('when a body is not UTF-8, then it is refused as such, never decoded to U+FFFD and kept', async () => {
    const res = await request(`${sys.gw.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from('{"email":"'), Buffer.from([0xff, 0xfe]), Buffer.from('@b.c"}')]),
    });
    expect(res.statusCode).toBe(400);
    expect(errorEnvelopeSchema.parse(await res.body.json()).error).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'The request body is not valid UTF-8.',
      details: [{ field: 'body', message: 'not valid UTF-8' }],
    });
  });

  it('when a body declares a charset, then UTF-8 and ASCII are read and any other is 415', async () => {
    const send = (contentType: string, body: Buffer) =>
      request(`${sys.gw.url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': contentType },
        body,
      });
    for (const charset of ['utf-8', 'UTF8', 'us-ascii', '"ascii"']) {
      const res = await send(`application/json; charset=${charset}`, Buffer.from('{}'));
      // Read and parsed: the empty object lacks its fields.
      expect([charset, res.statusCode]).toEqual([charset, 400]);
      expect(errorEnvelopeSchema.parse(await res.body.json()).error.message).toContain('email is required');
    }
    const utf16 = await send('application/json; charset=utf-16le', Buffer.from('{}', 'utf16le'));
    expect(utf16.statusCode).toBe(415);
    expect(errorEnvelopeSchema.parse(await utf16.body.json()).error).toMatchObject({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'charset "utf-16le" is not supported: JSON bodies are UTF-8.',
    });
  });

  it('when a page is asked for a range it does not have, then a JSON error envelope, not 500', async () => {
    const res = await request(`${sys.gw.url}/dashboard`, { headers: { range: 'bytes=999999-' } });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-range']).toBeUndefined();
    expect(errorEnvelopeSchema.parse(await res.body.json()).error.code).toBe('VALIDATION_ERROR');
  });
});
