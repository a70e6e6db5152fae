import { TEST_INTERNAL_KEYS, stablePorts, testBrokerPrefix, uniqueName, waitFor } from '@signal/test-kit';
import {
  dropRedisKeys,
  dropServiceDatabases,
  infraEnv,
  isReady as ready,
  runBuilt as run,
} from './built-services';
import { removeBrokerPrefix } from '@signal/messaging';

const broker = testBrokerPrefix('proc', removeBrokerPrefix);

const secrets = {
  INTERNAL_JWT_PRIVATE_KEY: TEST_INTERNAL_KEYS.privateKey,
  INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
  INGEST_TOKEN: 'proc-ingest-token-0123456789abcdef',
  API_KEY_PEPPER: 'proc-pepper-0123456789abcdef0123456789',
  SESSION_JWT_SECRET: 'proc-session-secret-0123456789abcdef012',
};

describe('each service as a process from its built output', () => {
  const db = uniqueName('t_proc');
  // info: the start-up lines show up in a failure's output (and are checked for secrets too).
  const common = { ...secrets, ...infraEnv(broker.prefix), LOG_LEVEL: 'info' };
  afterAll(async () => {
    await broker.cleanup();
    await dropServiceDatabases(db);
    await dropRedisKeys(broker.prefix);
  });
  const cases: Array<[string, string, Record<string, string>]> = [
    ['signals', 'services/signals/dist/main.js', { SIGNALS_DB: `${db}_signals` }],
    ['stats', 'services/stats/dist/main.js', { STATS_DB: `${db}_stats` }],
    ['webhooks api', 'services/webhooks/dist/main.js', { WEBHOOKS_DB: `${db}_webhooks` }],
    ['webhooks worker', 'services/webhooks/dist/worker.js', { WEBHOOKS_DB: `${db}_webhooks` }],
    [
      'api-gateway',
      'services/api-gateway/dist/main.js',
      {
        GATEWAY_DB: `${db}_gateway`,
        SIGNALS_URL: 'http://127.0.0.1:1',
        STATS_URL: 'http://127.0.0.1:1',
        WEBHOOKS_URL: 'http://127.0.0.1:1',
      },
    ],
  ];

  /**
   * Starts `entry` on free ports and waits until it is ready. A port found free can be taken by
   * another test's connection before the service binds it: that start (EADDRINUSE) is tried
   * again on new ports; any other exit or a start past 20 s fails with what the process printed.
   */
  async function startReady(entry: string, env: Record<string, string>) {
    for (let attempt = 1; ; attempt++) {
      const drawn = await stablePorts(2);
      const port = drawn[0]!;
      const metricsPort = drawn[1]!;
      const proc = run(entry, {
        ...common,
        ...env,
        PORT: String(port),
        WORKER_PORT: String(port),
        METRICS_PORT: String(metricsPort),
        WORKER_METRICS_PORT: String(metricsPort),
      });
      const outcome = await waitFor(
        async () => (proc.child.exitCode !== null ? 'exited' : (await ready(port)) ? 'ready' : undefined),
        20_000,
        100,
        `${entry} to be ready`,
      ).catch((err: unknown) => {
        proc.child.kill('SIGKILL');
        throw new Error(
          `${err instanceof Error ? err.message : String(err)}\n--- its output ---\n${proc.output()}`,
        );
      });
      if (outcome === 'ready') return { proc, port };
      if (attempt < 3 && /EADDRINUSE/.test(proc.output())) continue;
      throw new Error(`${entry} exited with ${proc.child.exitCode} before it was ready:\n${proc.output()}`);
    }
  }

  it.each(cases)(
    'when %s starts against real infra, then /readyz is 200, and SIGTERM drains and exits 0',
    async (_name, entry, env) => {
      const { proc, port } = await startReady(entry, env);
      try {
        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(health.status).toBe(200);
        proc.child.kill('SIGTERM');
        expect(await proc.exited).toBe(0);
        expect(proc.output()).not.toMatch(/secret-0123|ingest-token/);
      } finally {
        if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
      }
    },
    180_000,
  );

  it('when a required variable is missing or bad, then the process stops at once with one clear line per variable', async () => {
    const proc = run('services/signals/dist/main.js', {
      MONGO_URL: 'not-a-url',
      INTERNAL_JWT_PUBLIC_KEY: 'not-a-key',
    });
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toContain('signals: invalid configuration');
    expect(proc.output()).toMatch(/MONGO_URL: must be a URL/);
    expect(proc.output()).toMatch(/INTERNAL_JWT_PUBLIC_KEY: must be an ECDSA P-256 public key/);
    expect(proc.output()).not.toContain('not-a-key');
    expect(proc.output()).toMatch(/AMQP_URL: is required/);
    expect(proc.output()).not.toMatch(/\n\s+at /);
  });
});
