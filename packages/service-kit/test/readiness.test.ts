import pino from 'pino';
import request from 'supertest';
import { z } from 'zod';
import { EVERYTHING_BUT_DATE } from '@signal/test-kit';
import {
  createBaseApp,
  DEFAULT_READINESS_TIMING,
  finishApp,
  observabilityEnv,
  readinessTiming,
  readinessVerdict,
  type ServesWith,
} from '../src';

const logger = pino({ level: 'silent' });
const servesWithEither: ServesWith = (up) => up('mongo') || up('redis');

describe('readiness verdict', () => {
  it('when every check succeeds, then ready', () => {
    expect(readinessVerdict({ mongo: 'ok', redis: 'ok' }, servesWithEither).status).toBe('ready');
  });

  it('when a check the service can serve without is down, then degraded', () => {
    expect(readinessVerdict({ mongo: 'ok', redis: 'down' }, servesWithEither).status).toBe('degraded');
    expect(readinessVerdict({ mongo: 'timeout', redis: 'ok' }, servesWithEither).status).toBe('degraded');
  });

  it('when the service cannot serve without what is down, then down', () => {
    expect(readinessVerdict({ mongo: 'down', redis: 'timeout' }, servesWithEither).status).toBe('down');
    expect(readinessVerdict({ mongo: 'down' }, () => false).status).toBe('down');
  });
});

describe('/readyz', () => {
  function app(state: Record<string, boolean>) {
    const calls = { mongo: 0, redis: 0 };
    const lifecycle = { shuttingDown: false };
    const check = (name: 'mongo' | 'redis') => async () => {
      calls[name] += 1;
      if (!state[name]) throw new Error('down');
    };
    const a = finishApp(
      createBaseApp({
        service: 't',
        logger,
        lifecycle,
        checks: { mongo: check('mongo'), redis: check('redis') },
        servesWith: servesWithEither,
      }),
      logger,
    );
    return { a, calls, lifecycle };
  }

  it('when something the service can serve without is down, then 200 with "degraded" and what is down', async () => {
    const { a } = app({ mongo: true, redis: false });
    const res = await request(a).get('/readyz').expect(200);
    expect(res.body).toEqual({
      success: true,
      data: { status: 'degraded', checks: { mongo: 'ok', redis: 'down' } },
    });
  });

  it('when it cannot serve, then 503 SERVICE_UNAVAILABLE with Retry-After and the checks', async () => {
    const { a } = app({ mongo: false, redis: false });
    const res = await request(a).get('/readyz').expect(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(res.body.checks).toEqual({ mongo: 'down', redis: 'down' });
  });

  it('when probed 50 times within a second, then the stores are asked once, and again after the second', async () => {
    // The second is the app's clock's (only Date is faked): 50 probes on a loaded machine can
    // take longer than one of the wall clock's.
    jest.useFakeTimers({ doNotFake: EVERYTHING_BUT_DATE });
    try {
      const { a, calls } = app({ mongo: true, redis: true });
      const responses = await Promise.all(Array.from({ length: 50 }, () => request(a).get('/readyz')));
      expect(responses.every((r) => r.status === 200)).toBe(true);
      expect(calls).toEqual({ mongo: 1, redis: 1 });
      jest.setSystemTime(Date.now() + 1100);
      await request(a).get('/readyz').expect(200);
      expect(calls).toEqual({ mongo: 2, redis: 2 });
    } finally {
      jest.useRealTimers();
    }
  });

  it('when shutting down, then 503 at once although the last look was ready', async () => {
    const { a, lifecycle } = app({ mongo: true, redis: true });
    await request(a).get('/readyz').expect(200);
    lifecycle.shuttingDown = true;
    const res = await request(a).get('/readyz').expect(503);
    expect(res.body.error.message).toBe('Shutting down.');
  });
});

describe('readiness timing from config', () => {
  const schema = z.object(observabilityEnv(9999));

  it('when nothing is set, then a look is reused for 1 s and a check may take 1.5 s', () => {
    expect(readinessTiming(schema.parse({}))).toEqual(DEFAULT_READINESS_TIMING);
    expect(DEFAULT_READINESS_TIMING).toEqual({ cacheMs: 1000, checkTimeoutMs: 1500 });
  });

  it('when the check timeout is below 50 ms or not a number, then the config is refused', () => {
    expect(schema.safeParse({ READINESS_CHECK_TIMEOUT_MS: '10' }).success).toBe(false);
    expect(schema.safeParse({ READINESS_CACHE_MS: 'soon' }).success).toBe(false);
  });

  it('when a check hangs past the configured timeout, then /readyz responds 503 naming it "timeout"', async () => {
    const timing = readinessTiming(
      schema.parse({ READINESS_CACHE_MS: '0', READINESS_CHECK_TIMEOUT_MS: '100' }),
    );
    const a = finishApp(
      createBaseApp({
        service: 't',
        logger,
        lifecycle: { shuttingDown: false },
        checks: { mongo: () => new Promise(() => undefined) },
        readiness: timing,
      }),
      logger,
    );
    const res = await request(a).get('/readyz').expect(503);
    expect(res.body.checks).toEqual({ mongo: 'timeout' });
  });
});
