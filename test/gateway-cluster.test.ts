import { randomBytes } from 'node:crypto';
import {
  TEST_INTERNAL_KEYS,
  exactnessViolations,
  stablePorts,
  startReceiver,
  uniqueName,
  waitFor,
  type LimitedResponse,
  type Receiver,
} from '@signal/test-kit';
import {
  dropRedisKeys,
  dropServiceDatabases,
  infraEnv,
  isReady,
  runBuilt,
  type Running,
} from './built-services';

/**
 * The gateway as the run command starts it: one process per core behind one port
 * (GATEWAY_WORKERS), from its built output. The limits must stay exact across the processes.
 */
describe('clustered gateway (GATEWAY_WORKERS=2)', () => {
  const db = uniqueName('t_gwcluster');
  let upstream: Receiver;
  let gateway: Running;
  let url: string;
  let metricsUrl: string;

  beforeAll(async () => {
    upstream = await startReceiver(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"success":true,"data":{}}',
    }));
    const drawn = await stablePorts(2);
    const port = drawn[0]!;
    const metricsPort = drawn[1]!;
    url = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    gateway = runBuilt('services/api-gateway/dist/main.js', {
      ...infraEnv(`${db}:`),
      GATEWAY_DB: `${db}_gateway`,
      INTERNAL_JWT_PRIVATE_KEY: TEST_INTERNAL_KEYS.privateKey,
      API_KEY_PEPPER: `pepper-${randomBytes(16).toString('hex')}`,
      SESSION_JWT_SECRET: `session-${randomBytes(16).toString('hex')}`,
      SIGNALS_URL: upstream.url,
      STATS_URL: upstream.url,
      WEBHOOKS_URL: upstream.url,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      GATEWAY_WORKERS: '2',
      // 200 requests of one account at once: about 100 on each process, past the default bound
      // on one account's requests in progress (its own 429s are not the windows' and are tested
      // elsewhere).
      ACCOUNT_MAX_IN_FLIGHT: '1000',
      // Nor the bound on one address's open connections, each process's share of it 128: on a
      // loaded machine one process was handed more than that of the 200 and refused 10 with a
      // 429 that is the connection cap's (not in the request histogram), not the windows'.
      CLIENT_MAX_CONNECTIONS: '1000',
      LOG_LEVEL: 'info',
      ACCESS_LOG_SAMPLE: '0',
    });
    await waitFor(() => isReady(port), 30_000, 100, 'the clustered gateway').catch((err: unknown) => {
      throw new Error(`${String(err)}\n${gateway.output()}`);
    });
  }, 180_000);

  afterAll(async () => {
    if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    await upstream.close();
    await dropServiceDatabases(db);
    await dropRedisKeys(`${db}:`);
  });

  it('when 200 requests on a 60/min key arrive at once across two processes, then exactly 60 pass; the metrics are summed; SIGTERM stops them all', async () => {
    await waitFor(
      () => gateway.output().match(/"msg":"api-gateway listening"/g)?.length === 2,
      20_000,
      50,
      'both workers listening',
    );
    const signup = await fetch(`${url}/v1/dashboard/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `${db}@example.com`, password: 'a long enough password' }),
    });
    expect(signup.status).toBe(201);
    const cookie = signup.headers.get('set-cookie')!.split(';')[0]!;
    const { data: session } = (await signup.json()) as { data: { csrf_token: string } };
    const created = await fetch(`${url}/v1/dashboard/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': session.csrf_token },
      body: JSON.stringify({ name: 'burst' }),
    });
    const { data: key } = (await created.json()) as { data: { key: string } };

    // New connections each, so the primary hands them to both workers.
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        fetch(`${url}/v1/stats`, {
          headers: { authorization: `Bearer ${key.key}`, connection: 'close' },
        }).then((r): LimitedResponse => ({
          status: r.status,
          reset: r.headers.get('x-ratelimit-reset') ?? undefined,
          remaining: r.headers.get('x-ratelimit-remaining') ?? undefined,
        })),
      ),
    );
    // Exactly 60 per minute window (a burst across a minute's end is two bursts).
    const exactness = exactnessViolations(responses, 60);
    expect(exactness.violations).toEqual([]);
    const statuses = responses.map((r) => r.status);
    if (exactness.windows === 1) expect(statuses.filter((s) => s === 200)).toHaveLength(60);

    // A request is counted once its response has gone out: the client can have it first, so the
    // sums are read until they hold every response (on a loaded machine, a moment later).
    let metrics = '';
    const count = (status: string) =>
      Number(
        new RegExp(
          `http_request_duration_seconds_count\\{service="api-gateway",method="GET",route="/v1/stats",status="${status}"\\} (\\d+)`,
        ).exec(metrics)?.[1],
      );
    const answered = statuses.filter((s) => s === 200 || s === 429).length;
    // A scrape short of the responses throws what it saw, so a run that ends at the deadline says
    // why (a failed scrape, or counts that stopped short).
    await waitFor(
      async () => {
        const scrape = await fetch(metricsUrl);
        metrics = await scrape.text();
        if (count('200') + count('429') >= answered) return true;
        throw new Error(
          `scrape ${scrape.status}: 200 × ${count('200')}, 429 × ${count('429')} of ${answered} answered (statuses ${[...new Set(statuses)].join(', ')})`,
        );
      },
      60_000,
      100,
      'every response counted',
    );
    expect(count('200')).toBe(statuses.filter((s) => s === 200).length);
    expect(count('429')).toBe(statuses.filter((s) => s === 429).length);

    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });
});
