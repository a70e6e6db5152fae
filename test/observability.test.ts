import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  stablePorts,
  TEST_INTERNAL_KEYS,
  startReceiver,
  testBrokerPrefix,
  uniqueName,
  waitFor,
  type Receiver,
} from '@signal/test-kit';
import mongoose from 'mongoose';
import { signalInput } from '../services/signals/test/signals-harness';
import {
  dropRedisKeys,
  dropServiceDatabases,
  infraEnv,
  isReady as ready,
  runBuilt as run,
  type Running,
} from './built-services';
import { removeBrokerPrefix } from '@signal/messaging';

/**
 * Observability of the real processes: each service runs from its built output with tracing
 * on, exporting OTLP/JSON to a collector in this test (the in-memory exporter of this test is
 * that collector's list), and serving metrics on its internal port only.
 */
const broker = testBrokerPrefix('trace', removeBrokerPrefix);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
}

/** A minimal OTLP/HTTP (JSON) trace collector: keeps every span it is sent. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: Array<{
            resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans?: Array<{ spans?: Array<Omit<OtlpSpan, 'service'>> }>;
          }>;
        };
        for (const rs of body.resourceSpans ?? []) {
          const service =
            rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
        }
      } catch {
        // a protobuf or malformed body is simply not recorded; the assertions below then fail
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('tracing across the system', () => {
  const db = uniqueName('t_trace');
  const secrets = {
    INTERNAL_JWT_PRIVATE_KEY: TEST_INTERNAL_KEYS.privateKey,
    INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
    INGEST_TOKEN: 'trace-ingest-token-0123456789abcdef',
    API_KEY_PEPPER: 'trace-pepper-0123456789abcdef0123456789',
    SESSION_JWT_SECRET: 'trace-session-secret-0123456789abcdef012',
  };
  const processes: Running[] = [];
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: Receiver;
  const ports = { signals: 0, stats: 0, webhooks: 0, worker: 0, gateway: 0 };
  const metricsPorts = { signals: 0, stats: 0, webhooks: 0, worker: 0, gateway: 0 };

  beforeAll(async () => {
    collector = await startCollector();
    receiver = await startReceiver();
    const names = Object.keys(ports) as Array<keyof typeof ports>;
    const drawn = await stablePorts(names.length * 2);
    names.forEach((k, i) => {
      ports[k] = drawn[2 * i]!;
      metricsPorts[k] = drawn[2 * i + 1]!;
    });
    const common = {
      ...secrets,
      ...infraEnv(broker.prefix),
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const webhooksEnv = {
      WEBHOOKS_DB: `${db}_webhooks`,
      WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
      WEBHOOK_SUBSCRIPTION_CACHE_MS: '0',
    };
    const local = (port: number) => `http://127.0.0.1:${port}`;
    processes.push(
      run('services/signals/dist/main.js', {
        ...common,
        SIGNALS_DB: `${db}_signals`,
        PORT: String(ports.signals),
        METRICS_PORT: String(metricsPorts.signals),
      }),
      run('services/stats/dist/main.js', {
        ...common,
        STATS_DB: `${db}_stats`,
        PORT: String(ports.stats),
        METRICS_PORT: String(metricsPorts.stats),
      }),
      run('services/webhooks/dist/main.js', {
        ...common,
        ...webhooksEnv,
        PORT: String(ports.webhooks),
        METRICS_PORT: String(metricsPorts.webhooks),
      }),
      run('services/webhooks/dist/worker.js', {
        ...common,
        ...webhooksEnv,
        WORKER_PORT: String(ports.worker),
        WORKER_METRICS_PORT: String(metricsPorts.worker),
      }),
      run('services/api-gateway/dist/main.js', {
        ...common,
        GATEWAY_DB: `${db}_gateway`,
        PORT: String(ports.gateway),
        METRICS_PORT: String(metricsPorts.gateway),
        SIGNALS_URL: local(ports.signals),
        STATS_URL: local(ports.stats),
        WEBHOOKS_URL: local(ports.webhooks),
      }),
    );
    for (const port of Object.values(ports))
      await waitFor(() => ready(port), 30_000, 100, `service on ${port} to be ready`).catch(
        (err: unknown) => {
          throw new Error(`${String(err)}\n${processes.map((p) => p.output()).join('\n')}`);
        },
      );
  }, 180_000);

  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await receiver.close();
    await collector.close();
    await broker.cleanup();
    await dropServiceDatabases(db);
    await dropRedisKeys(broker.prefix);
  });

  /** Every span of one trace, with a way to walk from a span up to its root. */
  function traceOf(traceId: string) {
    const spans = collector.spans.filter((s) => s.traceId === traceId);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const ancestry = (span: OtlpSpan): OtlpSpan[] => {
      const chain = [span];
      for (let p = span.parentSpanId; p && byId.has(p); p = byId.get(p)!.parentSpanId)
        chain.push(byId.get(p)!);
      return chain;
    };
    return { spans, ancestry, services: new Set(spans.map((s) => s.service)) };
  }

  it('when a client subscribes through the gateway, then the gateway and the webhooks API share one trace', async () => {
    const demo = run(
      'services/api-gateway/dist/cli/admin.cli.js',
      {
        ...secrets,
        ...infraEnv(broker.prefix),
        GATEWAY_DB: `${db}_gateway`,
        SIGNALS_URL: 'http://127.0.0.1:1',
        STATS_URL: 'http://127.0.0.1:1',
        WEBHOOKS_URL: 'http://127.0.0.1:1',
      },
      ['demo'],
    );
    await new Promise((resolve) => demo.child.once('exit', resolve));
    const key = /DEMO_API_KEY=(\S+)/.exec(demo.output())?.[1];
    expect(key).toBeDefined();

    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`http://127.0.0.1:${ports.gateway}/v1/webhooks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
      body: JSON.stringify({ url: `${receiver.url}/traced`, events: ['signal.new'] }),
    });
    expect(res.status).toBe(201);
    // Spans arrive in export batches, a parent often after its children: wait for the server span.
    const isApiServer = (s: OtlpSpan) => s.service === 'webhooks-api' && s.kind === 2;
    const isGatewayServer = (s: OtlpSpan) => s.service === 'api-gateway' && s.kind === 2;
    await waitFor(
      () => traceOf(traceId).spans.some(isApiServer) && traceOf(traceId).spans.some(isGatewayServer),
      10_000,
      100,
      'the gateway and webhooks-api server spans',
    );
    const trace = traceOf(traceId);
    expect([...trace.services].sort()).toEqual(['api-gateway', 'webhooks-api']);
    // The webhooks API's server span hangs under the gateway's (its undici call).
    const apiServer = trace.spans.find(isApiServer)!;
    expect(trace.ancestry(apiServer).some((s) => s.service === 'api-gateway')).toBe(true);
  });

  it('when a signal is ingested, then one trace runs from that request through the outbox relay, the stats consumer and the webhook worker to the delivery', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await fetch(`http://127.0.0.1:${ports.signals}/internal/signals`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${secrets.INGEST_TOKEN}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-b7ad6b7169203331-01`,
      },
      body: JSON.stringify(signalInput()),
    });
    expect(res.status).toBe(201);

    await waitFor(() => receiver.requests.some((r) => r.path === '/traced'), 15_000, 50, 'the delivery');
    const delivered = receiver.requests.find((r) => r.path === '/traced')!;
    // The receiver sees the same trace (W3C traceparent on the delivery request).
    expect(String(delivered.headers.traceparent)).toContain(traceId);

    const isDeliveryPost = (s: OtlpSpan) =>
      s.service === 'webhooks-worker' && s.kind === 3 && s.name.startsWith('POST');
    const needed = [
      (s: OtlpSpan) => s.service === 'signals' && s.kind === 2, // SERVER: the ingest request
      (s: OtlpSpan) => s.service === 'signals' && s.kind === 4, // PRODUCER: the relay's publish
      (s: OtlpSpan) => s.service === 'stats' && s.kind === 5, // CONSUMER
      (s: OtlpSpan) => s.service === 'webhooks-worker' && s.kind === 5,
      isDeliveryPost,
    ];
    // Wait until every span of the chain arrived and the chain is whole (batches arrive apart).
    await waitFor(
      () => {
        const t = traceOf(traceId);
        const delivery = t.spans.find(isDeliveryPost);
        const whole = t.spans.every((span) => t.ancestry(span).at(-1)!.parentSpanId === 'b7ad6b7169203331');
        return needed.every((n) => t.spans.some(n)) && delivery && whole;
      },
      10_000,
      100,
      'spans from signals, stats and the worker',
    );
    const trace = traceOf(traceId);
    // Every span of the trace hangs, through its parents, under the client's span: one tree.
    for (const span of trace.spans)
      expect(trace.ancestry(span).at(-1)!.parentSpanId).toBe('b7ad6b7169203331');
    const ingest = trace.spans.find((s) => s.service === 'signals' && s.kind === 2)!; // SERVER
    const publish = trace.spans.find((s) => s.service === 'signals' && s.kind === 4)!; // PRODUCER
    const statsConsume = trace.spans.find((s) => s.service === 'stats' && s.kind === 5)!; // CONSUMER
    const delivery = trace.spans.find(isDeliveryPost)!; // CLIENT: the webhook POST
    expect(trace.ancestry(publish)).toContain(ingest); // the relay published under the write's trace
    expect(trace.ancestry(statsConsume)).toContain(publish);
    const deliveryChain = trace.ancestry(delivery);
    expect(deliveryChain).toContain(publish);
    expect(
      deliveryChain.filter((s) => s.service === 'webhooks-worker' && s.kind === 5).length,
    ).toBeGreaterThanOrEqual(2); // fan-out, then the attempt
    // …and the attempt's record names the trace it ran in.
    const conn = await mongoose.createConnection(infraEnv(broker.prefix).MONGO_URL!).asPromise();
    try {
      const entries = await conn
        .useDb(`${db}_webhooks`)
        .collection('delivery_log')
        .find({ kind: 'attempt' })
        .toArray();
      expect(entries.some((e) => e.trace_id === traceId)).toBe(true);
    } finally {
      await conn.close();
    }
  });

  const scrape = async (port: number) => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  /** The value of one sample line, e.g. `outbox_publish_lag_seconds_count`. */
  const sample = (text: string, name: string, labels = ''): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}${labels}`) && /\s[\d.e+-]+$/.test(l));
    return line ? Number(line.split(/\s/).at(-1)) : Number.NaN;
  };

  it('when the public ports are asked for /metrics, then they return the 404 envelope; the internal port serves process and domain metrics', async () => {
    for (const port of Object.values(ports)) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(404);
      const body = (await res.json()) as { error?: { code?: string } };
      if (port !== ports.worker) expect(body.error?.code).toBe('NOT_FOUND');
    }
    const signals = await scrape(metricsPorts.signals);
    expect(sample(signals, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(signals, 'outbox_publish_lag_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(
      sample(signals, 'read_model_apply_lag_seconds_count', '{model="timeline"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(signals, 'read_model_ready', '{model="timeline"}')).toBe(1);
    expect(signals).toMatch(
      /http_request_duration_seconds_count\{service="signals",method="POST",route="\/internal\/signals",status="201"\} \d/,
    );

    const stats = await scrape(metricsPorts.stats);
    expect(
      sample(stats, 'messages_handled_total', `{queue="${broker.prefix}stats.signal-events",outcome="ack"}`),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(stats, 'queue_messages', `{queue="${broker.prefix}stats.signal-events",kind="dead"}`)).toBe(
      0,
    );
    expect(sample(stats, 'read_model_apply_lag_seconds_count', '{model="agg"}')).toBeGreaterThanOrEqual(1);

    const worker = await scrape(metricsPorts.worker);
    // First attempts of fan-out are taken from their account's lane.
    const laneAcks = worker
      .split('\n')
      .filter(
        (l) =>
          l.startsWith(`messages_handled_total{queue="${broker.prefix}webhooks.deliveries.lane.`) &&
          l.includes('outcome="ack"'),
      );
    expect(laneAcks.reduce((n, l) => n + Number(l.split(/\s/).at(-1)), 0)).toBeGreaterThanOrEqual(1);
    expect(sample(worker, 'webhook_attempts_total', '{outcome="succeeded"}')).toBeGreaterThanOrEqual(1);
    expect(sample(worker, 'webhook_event_to_delivery_seconds_count')).toBeGreaterThanOrEqual(1);
    // Metrics the docs name that nothing here has counted yet are declared all the same.
    for (const name of [
      'webhook_deferrals_total',
      'store_writes_refused_total',
      'store_writes_already_held_total',
    ])
      expect(worker).toContain(`# TYPE ${name} counter`);
    for (const name of ['webhook_jobs_waiting_over_share', 'webhook_jobs_waiting_for_subscription'])
      expect(worker).toContain(`# TYPE ${name} gauge`);
  });

  it('when a request is served, then its access line at info carries the request id and the trace id', () => {
    const signalsOut = processes[0]!.output();
    const line = signalsOut
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.path === '/internal/signals');
    expect(line).toMatchObject({ level: 30, status: 201, trace_id: '0af7651916cd43dd8448eb211c80319c' });
    expect(String(line?.request_id)).toMatch(/^req_/);
  });
});
