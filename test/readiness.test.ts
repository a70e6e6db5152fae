import {
  holdStoreTables,
  infraUrls,
  startTcpProxy,
  testBrokerPrefix,
  viaProxy,
  waitFor,
  type TcpProxy,
} from '@signal/test-kit';
import request from 'supertest';
import { signalInput, startSignals, type SignalsHarness } from '../services/signals/test/signals-harness';
import { startStats, type StatsHarness } from '../services/stats/test/stats-harness';
import { startWebhooks, type WebhooksHarness } from '../services/webhooks/test/webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/**
 * Readiness reflects only what a service cannot serve without: each service
 * reaches Redis, RabbitMQ and the MongoDB-wire server through its own TCP proxies, which the tests
 * cut and restore; /readyz and the service's own routes are asked over HTTP meanwhile.
 */

interface Cuttable {
  mongo: TcpProxy;
  redis: TcpProxy;
  amqp: TcpProxy;
  env: Record<string, string>;
  close(): Promise<void>;
}

async function proxies(): Promise<Cuttable> {
  const urls = infraUrls();
  const to = async (url: string, port: number) => {
    const u = new URL(url);
    return startTcpProxy(u.hostname, Number(u.port || port));
  };
  const mongo = await to(urls.mongoUrl, 27017);
  const redis = await to(urls.redisUrl, 6379);
  const amqp = await to(urls.amqpUrl, 5672);
  return {
    mongo,
    redis,
    amqp,
    env: {
      MONGO_URL: viaProxy(urls.mongoUrl, mongo),
      REDIS_URL: viaProxy(urls.redisUrl, redis),
      AMQP_URL: viaProxy(urls.amqpUrl, amqp),
      // A look at the dependencies is reused for 100 ms here (1 s by default), so each verdict
      // below shows within a poll or two instead of a second or more.
      READINESS_CACHE_MS: '100',
      READINESS_CHECK_TIMEOUT_MS: '500',
    },
    async close() {
      await Promise.all([mongo.close(), redis.close(), amqp.close()]);
    },
  };
}

/** A URL or an in-process app (the worker's health app). */
type Target = Parameters<typeof request>[0];
type Verdict = { status: number; state?: string; checks: Record<string, string> };

async function readyz(app: Target): Promise<Verdict> {
  const res = await request(app).get('/readyz');
  return {
    status: res.status,
    state: res.body?.data?.status,
    checks: res.body?.data?.checks ?? res.body?.checks ?? {},
  };
}

/** Polls /readyz until it says `state` (the verdict is cached for 100 ms, checks time out at 0.5 s). */
async function until(app: Target, state: 'ready' | 'degraded' | 'down', down: string[] = []) {
  let last = '';
  return waitFor(
    async () => {
      const v = await readyz(app);
      last = JSON.stringify(v);
      const matches =
        (state === 'down' ? v.status === 503 : v.status === 200 && v.state === state) &&
        down.every((name) => v.checks[name] !== 'ok');
      return matches ? v : undefined;
    },
    15_000,
    50,
    `/readyz to say ${state}${down.length ? ` (${down.join(', ')} down)` : ''}`,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; last response ${last}`);
  });
}

/** Cuts `cut`, runs `check`, restores them, then waits until each of `apps` says ready again. */
async function whileCut(cut: TcpProxy[], check: () => Promise<void>, ...apps: Target[]): Promise<void> {
  for (const p of cut) p.cut();
  try {
    await check();
  } finally {
    for (const p of cut) p.restore();
  }
  for (const app of apps) await until(app, 'ready');
}

describe('readiness of the signals service', () => {
  let net: Cuttable;
  let svc: SignalsHarness;
  let signalId: string;
  const list = () => request(svc.url).get('/v1/signals').set('Authorization', `Bearer ${svc.token()}`);

  beforeAll(async () => {
    net = await proxies();
    svc = await startSignals('ready_signals', { ...net.env, STORE_FALLBACK_CONCURRENCY: '1' });
    await svc.deps.amqp.waitUntilConnected();
    const created = await request(svc.url)
      .post('/internal/signals')
      .set(svc.ingestAuth)
      .send(signalInput())
      .expect(201);
    signalId = created.body.data.id;
    await until(svc.url, 'ready');
  });
  afterAll(async () => {
    await svc?.stop();
    await net?.close();
  });

  it('when Redis is cut, then ready but "degraded" and lists are served from MongoDB', async () => {
    await whileCut(
      [net.redis],
      async () => {
        const v = await until(svc.url, 'degraded', ['timeline']);
        expect(v.checks.mongo).toBe('ok');
        const res = await list().expect(200);
        expect(res.body.data.map((s: { id: string }) => s.id)).toEqual([signalId]);
      },
      svc.url,
    );
  });

  it('when Redis is cut and more lists arrive than MongoDB may run at once, then the surplus gets 503 + Retry-After at once', async () => {
    await whileCut(
      [net.redis],
      async () => {
        await until(svc.url, 'degraded', ['timeline']);
        const responses = await Promise.all(Array.from({ length: 40 }, () => list()));
        const statuses = responses.map((r) => r.status);
        expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
        expect(statuses).toContain(200);
        const shed = responses.filter((r) => r.status === 503);
        expect(shed.length).toBeGreaterThan(0);
        expect(
          shed.every((r) => r.headers['retry-after'] === '1' && r.body.error.code === 'SERVICE_UNAVAILABLE'),
        ).toBe(true);
      },
      svc.url,
    );
  });

  it('when MongoDB is cut, then ready but "degraded": lists and details come from the index, ingest responds 503 with Retry-After', async () => {
    await whileCut(
      [net.mongo],
      async () => {
        const v = await until(svc.url, 'degraded', ['mongo']);
        expect(v.checks.timeline).toBe('ok');
        expect((await list().expect(200)).body.meta.total).toBe(1);
        await request(svc.url)
          .get(`/v1/signals/${signalId}`)
          .set('Authorization', `Bearer ${svc.token()}`)
          .expect(200);
        const refused = await request(svc.url)
          .post('/internal/signals')
          .set(svc.ingestAuth)
          .send(signalInput());
        expect(refused.status).toBe(503);
        expect(refused.headers['retry-after']).toBeDefined();
        // The body says what the header says, as on every 503.
        expect(refused.body.error.retry_after).toBe(Number(refused.headers['retry-after']));
      },
      svc.url,
    );
  });

  it('when both MongoDB and Redis are cut, then 503 (nothing left to read from), and ready again once they are back', async () => {
    await whileCut(
      [net.mongo, net.redis],
      async () => {
        const v = await until(svc.url, 'down', ['mongo', 'timeline']);
        expect(v.checks.rabbitmq).toBe('ok');
      },
      svc.url,
    );
  });

  it('when RabbitMQ is cut, then "degraded" and ingest still takes signals (their events wait in the outbox)', async () => {
    await whileCut(
      [net.amqp],
      async () => {
        await until(svc.url, 'degraded', ['rabbitmq']);
        await request(svc.url).post('/internal/signals').set(svc.ingestAuth).send(signalInput()).expect(201);
      },
      svc.url,
    );
  });
});

describe('readiness of the stats service', () => {
  const broker = testBrokerPrefix('ready_stats', removeBrokerPrefix);
  let net: Cuttable;
  let svc: StatsHarness;
  const stats = () => request(svc.url).get('/v1/stats').set(svc.auth);

  beforeAll(async () => {
    net = await proxies();
    svc = await startStats('ready_stats', broker.prefix, net.env);
    await until(svc.url, 'ready');
  });
  afterAll(async () => {
    await svc?.stop();
    await net?.close();
    await broker.cleanup();
  });

  it('when Redis is cut, then "degraded" and the figures come from the projection', async () => {
    await whileCut(
      [net.redis],
      async () => {
        await until(svc.url, 'degraded', ['aggregates']);
        await stats().expect(200);
      },
      svc.url,
    );
  });

  it('when MongoDB is cut, then "degraded" and the figures come from the aggregates', async () => {
    await whileCut(
      [net.mongo],
      async () => {
        const v = await until(svc.url, 'degraded', ['mongo']);
        expect(v.checks.aggregates).toBe('ok');
        await stats().expect(200);
      },
      svc.url,
    );
  });

  it('when MongoDB and Redis are cut, then 503; when RabbitMQ alone is cut, then "degraded"', async () => {
    await whileCut(
      [net.mongo, net.redis],
      async () => {
        await until(svc.url, 'down', ['mongo', 'aggregates']);
      },
      svc.url,
    );
    await whileCut(
      [net.amqp],
      async () => {
        await until(svc.url, 'degraded', ['rabbitmq']);
        await stats().expect(200);
      },
      svc.url,
    );
  });
});

describe('the time limit of reads from MongoDB while the read model is away', () => {
  const broker = testBrokerPrefix('ready_limits', removeBrokerPrefix);
  // A fallback read gets 300 ms: then 503, and the store is to stop it.
  const limit = { STORE_FALLBACK_CONCURRENCY: '1', STORE_FALLBACK_DEADLINE_MS: '300' };
  let net: Cuttable;
  let signals: SignalsHarness;
  let stats: StatsHarness;

  beforeAll(async () => {
    net = await proxies();
    // The outbox sweep reads the signals' table too: not while it is held here.
    signals = await startSignals('ready_limit_signals', {
      ...net.env,
      ...limit,
      OUTBOX_SWEEP_INTERVAL_MS: '3600000',
    });
    stats = await startStats('ready_limit_stats', broker.prefix, { ...net.env, ...limit });
    await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput())
      .expect(201);
    await until(signals.url, 'ready');
    await until(stats.url, 'ready');
  });
  afterAll(async () => {
    await signals?.stop();
    await stats?.stop();
    await net?.close();
    await broker.cleanup();
  });

  /**
   * With the table of `dbName`'s `collection` held, `ask` is 503 + Retry-After at the deadline,
   * and the store stops the reads it was making for it (no request waits on the table any more);
   * once it is free, `ask` is answered.
   */
  async function stoppedAtTheDeadline(
    dbName: string,
    collection: string,
    ask: () => request.Test,
  ): Promise<void> {
    const held = await holdStoreTables(dbName, [collection]);
    if (!held) return;
    try {
      const refused = await ask();
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.error.code).toBe('SERVICE_UNAVAILABLE');
      // Without the store's own limit its reads would wait on the table until it is free.
      let waiting: string[] = [];
      await waitFor(
        async () => (waiting = await held.waiting()).length === 0,
        10_000,
        50,
        'the store to stop the reads',
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; still waiting: ${waiting.join(' | ')}`);
      });
    } finally {
      await held.release();
    }
    await ask().expect(200);
  }

  it('when MongoDB does not answer a signal list within STORE_FALLBACK_DEADLINE_MS, then 503, and the store stops reading for it', async () => {
    await whileCut(
      [net.redis],
      async () => {
        await until(signals.url, 'degraded', ['timeline']);
        await stoppedAtTheDeadline(signals.config.SIGNALS_DB, 'signals', () =>
          request(signals.url).get('/v1/signals').set('Authorization', `Bearer ${signals.token()}`),
        );
      },
      signals.url,
    );
  });

  it('when MongoDB does not answer the statistics within STORE_FALLBACK_DEADLINE_MS, then 503, and the store stops reading for them', async () => {
    await whileCut(
      [net.redis],
      async () => {
        await until(stats.url, 'degraded', ['aggregates']);
        await stoppedAtTheDeadline(stats.deps.mongo.name, 'signal_projection', () =>
          request(stats.url).get('/v1/stats').set(stats.auth),
        );
      },
      stats.url,
    );
  });
});

describe('readiness of the webhooks API and worker', () => {
  const broker = testBrokerPrefix('ready_hooks', removeBrokerPrefix);
  let net: Cuttable;
  let svc: WebhooksHarness;
  const worker = () => {
    if (!svc.worker) throw new Error('the harness runs the worker');
    return svc.worker.health;
  };

  beforeAll(async () => {
    net = await proxies();
    svc = await startWebhooks({ label: 'ready_hooks', prefix: broker.prefix, env: net.env });
    await until(svc.url, 'ready');
    await until(worker(), 'ready');
  });
  afterAll(async () => {
    await svc?.stop();
    await net?.close();
    await broker.cleanup();
  });

  it('when RabbitMQ is cut, then the API is "degraded" and lists subscriptions, while the worker (which takes its jobs from it) is not ready', async () => {
    await whileCut(
      [net.amqp],
      async () => {
        await until(svc.url, 'degraded', ['rabbitmq']);
        await request(svc.url).get('/v1/webhooks').set(svc.auth('acc_ready')).expect(200);
        await until(worker(), 'down', ['rabbitmq']);
      },
      svc.url,
      worker(),
    );
  });

  it('when MongoDB is cut, then neither the API nor the worker is ready', async () => {
    await whileCut(
      [net.mongo],
      async () => {
        await until(svc.url, 'down', ['mongo']);
        await until(worker(), 'down', ['mongo']);
      },
      svc.url,
      worker(),
    );
  });
});
