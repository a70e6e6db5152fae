import { createHmac, generateKeyPairSync } from 'node:crypto';
import { connect, type AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { z } from 'zod';
import request from 'supertest';
import { EVERYTHING_BUT_DATE, waitFor } from '@signal/test-kit';
import { Router } from 'express';
import { wholeNumberParam } from '@signal/contracts';
import pino from 'pino';
import {
  AppError,
  GracefulShutdown,
  InternalTokenCache,
  KeyedMutex,
  createBaseApp,
  finishApp,
  metrics,
  parseOrThrow,
  requireInternalAuth,
  signInternalToken,
  startHttpServer,
  verifyInternalToken,
  writeAccessLine,
  type InternalLimits,
  type RunningServer,
} from '../src';

const logger = pino({ level: 'silent' });
const internalKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });

function app() {
  const lifecycle = { shuttingDown: false };
  const a = createBaseApp({
    service: 't',
    logger,
    lifecycle,
    checks: { ok: async () => undefined },
    jsonLimitBytes: 1024,
  });
  a.post('/echo', (req, res) => {
    const body = parseOrThrow(z.strictObject({ name: z.string().min(1) }), req.body ?? {}, 'body');
    res.json({ success: true, data: body });
  });
  a.post('/tags', (req, res) => {
    const body = parseOrThrow(
      z.strictObject({ tags: z.array(z.string()), owner: z.strictObject({ email: z.string() }) }),
      req.body ?? {},
      'body',
    );
    res.json({ success: true, data: body });
  });
  a.get('/page', (req, res) => {
    const q = parseOrThrow(z.strictObject({ limit: z.string().optional() }), req.query, 'query');
    res.json({ success: true, data: q });
  });
  a.get('/boom', () => {
    throw new Error('driver said: password=hunter2 at 10.0.0.5');
  });
  a.get('/limited', () => {
    throw new AppError('RATE_LIMIT_EXCEEDED', undefined, { retryAfter: 7 });
  });
  a.get('/secure', requireInternalAuth(internalKeys.publicKey, 'svc'), (_req, res) => {
    res.json({ success: true, data: res.locals.accountId });
  });
  a.get('/secure/limits', requireInternalAuth(internalKeys.publicKey, 'svc'), (_req, res) => {
    res.json({ success: true, data: res.locals.limits });
  });
  return { app: finishApp(a, logger), lifecycle };
}

describe('service-kit HTTP pieces', () => {
  const { app: a, lifecycle } = app();

  it('when a route throws an unknown error, then 500 INTERNAL_ERROR without stack or driver text', async () => {
    const res = await request(a).get('/boom').expect(500);
    expect(res.body).toEqual({
      success: false,
      error: {
        code: 'INTERNAL_ERROR',
        message: 'An internal error occurred.',
        request_id: res.headers['x-request-id'],
      },
    });
  });

  it('when the body is wrong, too big, not JSON, or broken, then 400/413/415/400 envelopes', async () => {
    expect((await request(a).post('/echo').send({ name: '' }).expect(400)).body.error.message).toContain(
      'name',
    );
    expect(
      (await request(a).post('/echo').send({ name: 'x', x: 1 }).expect(400)).body.error.message,
    ).toContain('unknown field');
    await request(a)
      .post('/echo')
      .send({ name: 'x'.repeat(2000) })
      .expect(413);
    await request(a).post('/echo').set('Content-Type', 'text/plain').send('hi').expect(415);
    await request(a).post('/echo').set('Content-Type', 'application/json').send('{').expect(400);
  });

  /** What parseOrThrow says of `input`, or 'accepted'. */
  const refusalOf = (schema: z.ZodType, input: unknown, where: 'query' | 'body') => {
    try {
      parseOrThrow(schema, input, where);
    } catch (err) {
      return err instanceof AppError ? err.message : String(err);
    }
    return 'accepted';
  };

  it('when a whole-number parameter is negative, fractional or a word, or a one-value parameter is repeated, then the message says what is wrong', () => {
    const schema = z.strictObject({
      limit: wholeNumberParam('limit', 1, 100).optional(),
      type: z.enum(['new', '3d']).optional(),
    });
    const messageOf = (query: Record<string, unknown>) => refusalOf(schema, query, 'query');
    expect(messageOf({ limit: '-1' })).toBe('limit must be between 1 and 100');
    expect(messageOf({ limit: '0' })).toBe('limit must be between 1 and 100');
    expect(messageOf({ limit: '1.5' })).toBe('limit must be a whole number');
    expect(messageOf({ limit: 'ten' })).toBe('limit must be a whole number');
    expect(messageOf({ limit: '100' })).toBe('accepted');
    expect(messageOf({ type: ['new', '3d'] })).toBe('type must be given once');
    expect(messageOf({ limit: ['5', '6'] })).toBe('limit must be given once');
  });

  it('when a value passes a bound or is no date-time, then the message says it in words, naming the field', () => {
    const schema = z.strictObject({
      name: z.string().max(5).optional(),
      seconds: z.number().min(0).optional(),
      tags: z.array(z.string()).max(2).optional(),
      at: z.iso.datetime({ offset: true }).optional(),
    });
    const messageOf = (body: Record<string, unknown>) => refusalOf(schema, body, 'body');
    expect(messageOf({ name: 'toolong' })).toBe('name must be at most 5 characters');
    expect(messageOf({ seconds: -1 })).toBe('seconds must be at least 0');
    expect(messageOf({ tags: ['a', 'b', 'c'] })).toBe('tags must have at most 2 items');
    expect(messageOf({ at: 'tomorrow' })).toBe(
      'at must be an ISO 8601 date and time with its zone (2026-11-26T08:00:00Z)',
    );
  });

  it('when a field has the wrong type, is missing, null or repeated, then the message says which', async () => {
    const message = async (r: request.Test) => (await r.expect(400)).body.error.message as string;
    const tags = (body: unknown) => request(a).post('/tags').send(JSON.stringify(body)).type('json');
    expect(await message(tags({ tags: 'a', owner: { email: 'x' } }))).toBe('tags must be an array');
    expect(await message(tags({ tags: [], owner: { email: 1 } }))).toBe('owner.email must be a string');
    expect(await message(tags({ tags: [] }))).toBe('owner is required');
    expect(await message(tags({ tags: null, owner: { email: 'x' } }))).toBe('tags must not be null');
    expect(await message(request(a).get('/page?limit=5&limit=200'))).toBe('limit must be given once');
    expect(await message(request(a).post('/echo').type('json').send('null'))).toBe(
      'The request body must be a JSON object.',
    );
    expect(await message(tags([]))).toBe('The request body must be a JSON object.');
    expect(await message(request(a).post('/echo').type('json').send('{'))).toBe(
      'The request body is not valid JSON.',
    );
    // The store cannot hold NUL in text: refused at the boundary, naming the field.
    expect(await message(tags({ tags: ['a\u0000b'], owner: { email: 'x' } }))).toBe(
      'tags.0 must not contain the NUL character (\\u0000)',
    );
    expect(await message(tags({ tags: [], owner: { ['e\u0000']: 'x' } }))).toBe(
      'owner.e\uFFFD must not contain the NUL character (\\u0000)',
    );
    // Nor a lone surrogate (valid JSON, not UTF-8): stored, it would read back as U+FFFD.
    const surrogate = await request(a)
      .post('/tags')
      .type('json')
      .send('{"tags":["ok \\ud83d\\ude00", "\\ud800"],"owner":{"email":"x"}}')
      .expect(400);
    expect(surrogate.body.error.message).toMatch(/^tags\.1 must be valid Unicode: it holds a lone surrogate/);
    expect(surrogate.body.error.details).toEqual([{ field: 'tags.1', message: 'holds a lone surrogate' }]);
    await request(a)
      .post('/tags')
      .type('json')
      .send('{"tags":["ok \\ud83d\\ude00"],"owner":{"email":"x"}}')
      .expect(200);
    // A body nested thousands of levels deep is walked without overflowing the stack.
    const roomy = createBaseApp({
      service: 't',
      logger,
      lifecycle: { shuttingDown: false },
      checks: {},
      jsonLimitBytes: 1024 * 1024,
    });
    roomy.post('/any', (_req, res) => res.json({ success: true }));
    const deep = `{"tags":${'['.repeat(20_000)}"a\\u0000"${']'.repeat(20_000)}}`;
    expect(await message(request(finishApp(roomy, logger)).post('/any').type('json').send(deep))).toMatch(
      /^tags\.0\.0\..* must not contain the NUL character/,
    );
  });

  it('when an AppError carries retryAfter, then body, message and Retry-After header agree', async () => {
    const res = await request(a).get('/limited').expect(429);
    expect(res.body.error.retry_after).toBe(7);
    expect(res.headers['retry-after']).toBe('7');
    // The wait in words: a client that shows the message says how long, not where to look.
    expect(res.body.error.message).toBe('Rate limit exceeded. Retry after 7 s.');
  });

  it('when a route is unknown, then 404 envelope; helmet headers are set', async () => {
    const res = await request(a).get('/nope').expect(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('when an internal token is valid for the audience, then it passes; otherwise 401', async () => {
    const token = (t: string) => request(a).get('/secure').set('Authorization', `Bearer ${t}`);
    await token(signInternalToken(internalKeys.privateKey, 'svc', 'acc_1')).expect(200);
    await token(signInternalToken(internalKeys.privateKey, 'other', 'acc_1')).expect(401);
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    await token(signInternalToken(stranger, 'svc', 'acc_1')).expect(401);
    await request(a).get('/secure').expect(401);
  });

  it('when a token has no exp, lives longer than a minute, uses another algorithm or none, then 401', async () => {
    const token = (t: string) => request(a).get('/secure').set('Authorization', `Bearer ${t}`);
    const claims = { iss: 'api-gateway', aud: 'svc', sub: 'acc_1' };
    await token(jwt.sign(claims, internalKeys.privateKey, { algorithm: 'ES256' })).expect(401);
    await token(jwt.sign(claims, internalKeys.privateKey, { algorithm: 'ES256', expiresIn: 3600 })).expect(
      401,
    );
    // Algorithm confusion: the public key used as an HMAC secret.
    const publicPem = internalKeys.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const hmac = createHmac('sha256', publicPem);
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify({ ...claims, exp: Math.floor(Date.now() / 1000) + 30 })).toString(
      'base64url',
    );
    await token(`${header}.${body}.${hmac.update(`${header}.${body}`).digest('base64url')}`).expect(401);
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    await token(`${none}.${body}.`).expect(401);
  });

  it('when a token carries the plan limits, then the service sees them; without them, an empty set', async () => {
    const limitsOf = async (t: string) =>
      (await request(a).get('/secure/limits').set('Authorization', `Bearer ${t}`).expect(200)).body.data;
    expect(
      await limitsOf(signInternalToken(internalKeys.privateKey, 'svc', 'acc_1', 30, { webhooks: 3 })),
    ).toEqual({ webhooks: 3 });
    expect(await limitsOf(signInternalToken(internalKeys.privateKey, 'svc', 'acc_1'))).toEqual({});
    expect(await limitsOf(signInternalToken(internalKeys.privateKey, 'svc', 'acc_1', 30, {}))).toEqual({});
  });

  it('when a token carries a limit of the wrong shape, then 401; an unknown limit is dropped', async () => {
    const claims = { iss: 'api-gateway', aud: 'svc', sub: 'acc_1' };
    const sign = (limits: unknown) =>
      jwt.sign({ ...claims, limits }, internalKeys.privateKey, { algorithm: 'ES256', expiresIn: 30 });
    for (const limits of [{ webhooks: -1 }, { webhooks: 'many' }, { webhooks: 1.5 }, 'all'])
      await request(a)
        .get('/secure/limits')
        .set('Authorization', `Bearer ${sign(limits)}`)
        .expect(401);
    // A limit a newer gateway adds is dropped here, not refused.
    const res = await request(a)
      .get('/secure/limits')
      .set('Authorization', `Bearer ${sign({ webhooks: 2, keys: 9 })}`)
      .expect(200);
    expect(res.body.data).toEqual({ webhooks: 2 });
  });

  it('when the token cache is asked for other limits of the same account, then it mints another token', () => {
    const signed: Array<InternalLimits | undefined> = [];
    const cache = new InternalTokenCache((audience, accountId, ttl, limits) => {
      signed.push(limits);
      return signInternalToken(internalKeys.privateKey, audience, accountId, ttl, limits);
    });
    const plain = cache.get('svc', 'acc_1');
    const three = cache.get('svc', 'acc_1', { webhooks: 3 });
    const five = cache.get('svc', 'acc_1', { webhooks: 5 });
    expect(new Set([plain, three, five]).size).toBe(3);
    expect(cache.get('svc', 'acc_1', { webhooks: 3 })).toBe(three);
    expect(cache.get('svc', 'acc_1')).toBe(plain);
    expect(cache.get('svc', 'acc_1', {})).toBe(plain);
    expect(signed).toEqual([undefined, { webhooks: 3 }, { webhooks: 5 }]);
    expect(verifyInternalToken(internalKeys.publicKey, 'svc', five)?.limits).toEqual({ webhooks: 5 });
  });

  it('when a token that passed expires, then the next call with it is refused', async () => {
    // The clock is held, then moved past the expiry, instead of waited on: a loaded machine can
    // take longer than the token's second between signing and the first call. Only Date is
    // faked; timers and I/O run as ever.
    jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE, now: Date.now() });
    try {
      const t = signInternalToken(internalKeys.privateKey, 'svc', 'acc_1', 1);
      await request(a).get('/secure').set('Authorization', `Bearer ${t}`).expect(200);
      jest.setSystemTime(Date.now() + 2100);
      await request(a).get('/secure').set('Authorization', `Bearer ${t}`).expect(401);
    } finally {
      jest.useRealTimers();
    }
  });

  it('when shutting down, then /readyz responds 503', async () => {
    await request(a).get('/readyz').expect(200);
    lifecycle.shuttingDown = true;
    await request(a).get('/readyz').expect(503);
    lifecycle.shuttingDown = false;
  });
});

describe('GracefulShutdown', () => {
  it('when run, then steps run once, in order, and a hanging step is abandoned', async () => {
    const order: string[] = [];
    const s = new GracefulShutdown(logger, 50)
      .register('http', async () => void order.push('http'))
      .register('stuck', () => new Promise<void>(() => undefined))
      .register('db', async () => void order.push('db'));
    await expect(s.run()).rejects.toThrow('shutdown finished with errors');
    expect(order).toEqual(['http', 'db']);
    expect(s.shuttingDown).toBe(true);
  });
});

describe('KeyedMutex', () => {
  it('when tasks share a key, then they run one at a time in order; other keys run alongside', async () => {
    const m = new KeyedMutex();
    const log: string[] = [];
    const task = (k: string, id: string, ms: number) =>
      m.run(k, async () => {
        log.push(`${id}>`);
        await new Promise((r) => setTimeout(r, ms));
        log.push(`<${id}`);
      });
    await Promise.all([task('a', 'a1', 20), task('a', 'a2', 1), task('b', 'b1', 5)]);
    expect(log.indexOf('<a1')).toBeLessThan(log.indexOf('a2>'));
    expect(log.indexOf('b1>')).toBeLessThan(log.indexOf('<a1'));
  });
});

describe('access lines', () => {
  it('when /readyz answers 503 (a dependency not there yet), then its line is info; another 503 or 500 is an error', () => {
    const lines: Array<Record<string, unknown>> = [];
    const captured = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const started = process.hrtime.bigint();
    const access = (path: string, status: number) =>
      writeAccessLine(captured, {
        method: 'GET',
        path,
        status,
        started,
        requestId: undefined,
        traceId: undefined,
      });
    access('/readyz', 503);
    access('/v1/signals', 503);
    access('/readyz', 500);
    expect(lines.map((l) => [l.path, l.status, l.level])).toEqual([
      ['/readyz', 503, 30],
      ['/v1/signals', 503, 50],
      ['/readyz', 500, 50],
    ]);
  });
});

describe('requests whose client leaves', () => {
  it('when a client closes its connection before its response, then the request still gets its access line and its metric, as 499', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const captured = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    let arrived = (): void => undefined;
    const held = new Promise<void>((resolve) => (arrived = resolve));
    const a = createBaseApp({
      service: 'gone',
      logger: captured,
      lifecycle: { shuttingDown: false },
      checks: {},
    });
    // Answers only after its client has gone (a login or a key creation still in progress), on a
    // router mounted under a path as the gateway's account routes are.
    const nested = Router();
    nested.post('/held', (_req, res) => {
      arrived();
      res.once('close', () => setImmediate(() => res.status(201).json({ success: true })));
    });
    a.use('/nested', nested);
    finishApp(a, captured);
    const server = a.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const gone = async () =>
      (await metrics.httpDuration().get()).values.find(
        (v) =>
          v.metricName === 'http_request_duration_seconds_count' &&
          v.labels.service === 'gone' &&
          v.labels.route === '/nested/held',
      );
    try {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(
        'POST /nested/held HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      );
      await held;
      socket.destroy();
      await waitFor(() => lines.some((l) => l.msg === 'request'), 5000, 10, 'the access line');
      expect(lines.filter((l) => l.msg === 'request')).toEqual([
        expect.objectContaining({ method: 'POST', path: '/nested/held', status: 499 }),
      ]);
      expect(await gone()).toMatchObject({ labels: { status: '499' }, value: 1 });
    } finally {
      server.close();
    }
  });
});

describe('refusals written below Express', () => {
  /** What the server sends on a raw connection for `bytes`, read until it closes the connection. */
  const exchange = (port: number, bytes: string): Promise<string> =>
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (chunk) => (got += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(got));
      socket.write(bytes);
    });
  const headOf = (raw: string) => raw.split('\r\n\r\n')[0]!.toLowerCase();
  const bodyOf = (raw: string): unknown => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

  let server: RunningServer;
  beforeAll(async () => {
    server = await startHttpServer({ listener: app().app, stalledMs: 1000 }, 0);
  });
  afterAll(() => server.close(100));

  it('when a body stops coming, then the client is told the request was not received in time before the connection closes, not cut without a word', async () => {
    const raw = await exchange(
      server.port,
      'POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
    );
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(headOf(raw)).toContain('connection: close');
    expect(bodyOf(raw)).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', message: 'The request was not received in time.' },
    });
  });

  it('when a request received whole waits past the stall time for its answer, then the answer the service gives reaches the client', async () => {
    // A login waiting for its turn at password work: the quiet is the service's, not the client's.
    const slow = await startHttpServer(
      {
        listener: (req, res) => {
          req.resume();
          req.on('end', () => setTimeout(() => res.end('{"success":true}'), 1500));
        },
        stalledMs: 1000,
      },
      0,
    );
    try {
      const raw = await exchange(
        slow.port,
        'POST /held HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
      );
      expect(raw).toMatch(/^HTTP\/1\.1 200 /);
      expect(bodyOf(raw)).toEqual({ success: true });
    } finally {
      await slow.close(100);
    }
  });

  it('when node:http refuses a request or a head repeats Host, then the refusal carries the security headers every response does', async () => {
    const tooLarge = await exchange(
      server.port,
      `GET /page HTTP/1.1\r\nHost: t\r\nX-Big: ${'y'.repeat(17_000)}\r\n\r\n`,
    );
    const twoHosts = await exchange(server.port, 'GET /page HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n');
    const badMethod = await exchange(server.port, 'FOO /page HTTP/1.1\r\nHost: t\r\n\r\n');
    for (const [raw, status] of [
      [tooLarge, 413],
      [twoHosts, 400],
      [badMethod, 400],
    ] as const) {
      expect(raw.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
      expect(headOf(raw)).toContain('x-content-type-options: nosniff');
      expect(headOf(raw)).toContain('content-security-policy:');
      expect(headOf(raw)).toContain('strict-transport-security:');
      expect(bodyOf(raw)).toMatchObject({ success: false, error: { request_id: expect.any(String) } });
    }
  });
});
