import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { signInternalToken } from '@signal/service-kit';
import { TEST_INTERNAL_KEYS, startReceiver, testBrokerPrefix, waitFor } from '@signal/test-kit';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/** What the never-responding receiver saw: each request's webhook-id, and whether the worker gave up on it. */
interface HeldRequest {
  webhookId: string;
  at: number;
  endedAt?: number;
}

/** A receiver that reads each request and never responds; it notes when the worker ends one. */
async function startHangingReceiver() {
  const held: HeldRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const entry: HeldRequest = { webhookId: String(req.headers['webhook-id']), at: Date.now() };
    held.push(entry);
    req.resume();
    res.on('close', () => {
      entry.endedAt ??= Date.now();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    held,
    /** Drops every held request (the worker's attempts fail at once) and stops listening. */
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const SLOW = 'acc_fair_slow';
const HEALTHY = 'acc_fair_healthy';
/** Long against everything else here: no healthy delivery may need a slow attempt to give up. */
const TIMEOUT_MS = 30_000;
/** Small, so that on a worker without per-account shares the slow account can hold every job. */
const PREFETCH = 40;

const auth = (accountId: string) => ({
  Authorization: `Bearer ${signInternalToken(TEST_INTERNAL_KEYS.signingKey, 'webhooks', accountId)}`,
});

describe('fairness between accounts in the delivery worker', () => {
  it("when one account's 20 receivers never respond, then another account's 5 healthy receivers get every delivery before any slow attempt gives up", async () => {
    const broker = testBrokerPrefix('wh_fair', removeBrokerPrefix);
    const slow = await startHangingReceiver();
    const healthy = await startReceiver(() => ({ status: 200 }));
    const hooks = await startWebhooks({
      label: 'wh_fair',
      prefix: broker.prefix,
      env: {
        WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        WEBHOOK_WORKER_PREFETCH: String(PREFETCH),
        WEBHOOK_RETRY_DELAYS_MS: '60000',
      },
    });
    try {
      for (let i = 0; i < 20; i++)
        await request(hooks.url)
          .post('/v1/webhooks')
          .set(auth(SLOW))
          .send({ url: `${slow.url}/slow${i}`, events: ['signal.new'] })
          .expect(201);
      // The slow account's receivers take all the worker lets them: 200 deliveries, every one held.
      await publishEvents(broker.prefix, 10);
      await waitFor(() => slow.held.length >= PREFETCH / 2, 20_000, 20, 'the slow receivers to be held');
      let seen = -1;
      await waitFor(
        () => {
          const settled = slow.held.length === seen;
          seen = slow.held.length;
          return settled;
        },
        20_000,
        1000,
        'the worker to take no more slow attempts',
      );

      for (let i = 0; i < 5; i++)
        await request(hooks.url)
          .post('/v1/webhooks')
          .set(auth(HEALTHY))
          .send({ url: `${healthy.url}/ok${i}`, events: ['signal.new'] })
          .expect(201);
      await publishEvents(broker.prefix, 4);
      // The first moment a slow attempt let go of its job: the worker ended a held request (its
      // timeout), or handed the same delivery to the receiver again (the job given up on).
      const firstRelease = (): number | undefined => {
        const ended = slow.held.flatMap((h) => (h.endedAt === undefined ? [] : [h.endedAt]));
        const seenIds = new Set<string>();
        const repeated = slow.held.filter((h) => seenIds.has(h.webhookId) || !seenIds.add(h.webhookId));
        const times = [...ended, ...repeated.map((h) => h.at)];
        return times.length > 0 ? Math.min(...times) : undefined;
      };
      await waitFor(
        () => healthy.requests.length >= 20 || firstRelease() !== undefined,
        TIMEOUT_MS * 2,
        50,
        'the healthy deliveries, or a slow attempt giving up',
      );
      const healthyArrived = healthy.requests.length;
      const released = firstRelease();

      expect({ healthyArrived, slowAttemptGaveUpFirst: released !== undefined }).toEqual({
        healthyArrived: 20,
        slowAttemptGaveUpFirst: false,
      });
      // Every slow request the worker started is still held: none of them made way for a healthy one.
      expect(slow.held.every((h) => h.endedAt === undefined)).toBe(true);
      expect(slow.held.length).toBeLessThan(200);
    } finally {
      await slow.close();
      await hooks.stop();
      await healthy.close();
      await broker.cleanup();
    }
  }, 180_000);
});
