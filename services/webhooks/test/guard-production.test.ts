import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  TEST_INTERNAL_KEYS,
  infraUrls,
  startDnsServer,
  testBrokerPrefix,
  waitFor,
  type TestDnsServer,
} from '@signal/test-kit';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { configSchema } from '../src/config';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/**
 * End to end with the SSRF guard and the resolver as production runs them (NODE_ENV=production,
 * no loopback setting): a subscription to an https name is delivered, because this test's name
 * server (on loopback, named by WEBHOOK_DNS_SERVERS) maps the name to its local receiver and the
 * guard lets exactly that address through. The guard's exception exists only in code passed by
 * this test (WorkerTestHooks); no setting reaches it, and production refuses the one setting that
 * widens the guard.
 */
const NAME = 'receiver.webhooks-e2e.test';
const METADATA_NAME = 'metadata.webhooks-e2e.test';
const OTHER_LOOPBACK_NAME = 'other.webhooks-e2e.test';
const SILENT_NAME = 'silent.webhooks-e2e.test';
let dns: TestDnsServer;
const ACC = 'acc_guard';
const broker = testBrokerPrefix('wh_guard', removeBrokerPrefix);
const dir = mkdtempSync(path.join(tmpdir(), 'wh-guard-'));
let hooks: WebhooksHarness;
let server: Server;
let port: number;
const received: Array<{ headers: Record<string, string>; body: string }> = [];

/** A throwaway self-signed certificate for NAME (openssl, at test time: nothing kept in the repo). */
function certificate(): { key: string; cert: string } {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${NAME}`,
      '-addext',
      `subjectAltName=DNS:${NAME}`,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

beforeAll(async () => {
  const tls = certificate();
  server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      received.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  dns = await startDnsServer({
    names: {
      [NAME]: ['127.0.0.1'],
      [METADATA_NAME]: ['169.254.169.254'],
      [OTHER_LOOPBACK_NAME]: ['127.0.0.2'],
    },
    silent: [SILENT_NAME],
  });
  hooks = await startWebhooks({
    label: 'wh_guard',
    prefix: broker.prefix,
    env: {
      NODE_ENV: 'production',
      WEBHOOK_ALLOW_LOOPBACK_URLS: 'false',
      WEBHOOK_DNS_SERVERS: dns.address,
      WEBHOOK_DNS_TIMEOUT_MS: '200',
    },
    testHooks: {
      guard: { allowLoopback: false, allowAddresses: new Set(['127.0.0.1']) },
      ca: tls.cert,
    },
  });
});
afterAll(async () => {
  await hooks.stop();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await broker.cleanup();
  await dns.close();
  rmSync(dir, { recursive: true, force: true });
});

async function subscribe(url: string) {
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url, events: ['signal.new'] })
    .expect(201);
  return res.body.data as { id: string; secret: string };
}

async function firstAttempt(id: string) {
  await request(hooks.url).post(`/v1/webhooks/${id}/test`).set(hooks.auth(ACC)).expect(202);
  return waitFor(
    async () => {
      const list = await request(hooks.url).get(`/v1/webhooks/${id}/deliveries`).set(hooks.auth(ACC));
      const d = list.body.data[0];
      if (!d || d.attempts_made < 1) return undefined;
      const detail = await request(hooks.url)
        .get(`/v1/webhooks/${id}/deliveries/${d.id}`)
        .set(hooks.auth(ACC));
      return detail.body.data as {
        status: string;
        attempts: Array<{ error: string | null; status_code: number | null }>;
      };
    },
    15_000,
    100,
    'the first attempt',
  );
}

describe('the SSRF guard in production mode, end to end', () => {
  it('when production is asked to allow loopback receivers, then the configuration is refused', () => {
    const asked = configSchema.safeParse({
      NODE_ENV: 'production',
      MONGO_URL: infraUrls().mongoUrl,
      AMQP_URL: infraUrls().amqpUrl,
      INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
      WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    });
    expect(asked.success).toBe(false);
    expect(asked.error?.issues.map((i) => i.path.join('.'))).toContain('WEBHOOK_ALLOW_LOOPBACK_URLS');
  });

  it('when a subscription names a host the guard lets through, then it is delivered over https, signed', async () => {
    const { id, secret } = await subscribe(`https://${NAME}:${port}/hook`);
    const attempt = await firstAttempt(id);
    expect(attempt.attempts[0]).toMatchObject({ status_code: 204, error: null });
    expect(attempt.status).toBe('succeeded');
    expect(received).toHaveLength(1);
    const got = received[0]!;
    const verified = new Webhook(secret).verify(got.body, {
      'webhook-id': got.headers['webhook-id']!,
      'webhook-timestamp': got.headers['webhook-timestamp']!,
      'webhook-signature': got.headers['webhook-signature']!,
    }) as { event: string };
    expect(verified.event).toBe('webhook.test');
  });

  it.each([
    ['the cloud metadata address', METADATA_NAME],
    ['a loopback address other than the one allowed', OTHER_LOOPBACK_NAME],
  ])(
    'when a name resolves to %s, then nothing is sent and the attempt is blocked_address',
    async (_what, name) => {
      const before = received.length;
      const { id } = await subscribe(`https://${name}:${port}/hook`);
      const attempt = await firstAttempt(id);
      expect(attempt.attempts[0]).toMatchObject({ status_code: null, error: 'blocked_address' });
      expect(received).toHaveLength(before);
    },
  );

  it.each([
    ['does not exist', 'nothing.webhooks-e2e.test'],
    ['has name servers that never answer', SILENT_NAME],
  ])("when a receiver's name %s, then nothing is sent and the attempt is dns_error", async (_what, name) => {
    const before = received.length;
    const { id } = await subscribe(`https://${name}:${port}/hook`);
    const attempt = await firstAttempt(id);
    expect(attempt.attempts[0]).toMatchObject({ status_code: null, error: 'dns_error' });
    expect(received).toHaveLength(before);
    expect(dns.questions).toContain(`A ${name}`);
  });

  it('when a subscription names a loopback or private address, then production refuses it at creation', async () => {
    for (const url of [
      `https://127.0.0.1:${port}/hook`,
      'http://example.com/hook',
      'https://10.0.0.8/hook',
    ]) {
      const res = await request(hooks.url)
        .post('/v1/webhooks')
        .set(hooks.auth(ACC))
        .send({ url, events: ['signal.new'] })
        .expect(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
  });
});
