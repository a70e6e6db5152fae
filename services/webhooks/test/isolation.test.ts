import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';
import { removeBrokerPrefix } from '@signal/messaging';

/**
 * One slow subscriber cannot slow the others: nine fast receivers beside a tenth that never
 * responds, with a delivery timeout longer than the test may run. Every fast delivery of a
 * burst arrives while the silent receiver still holds its first connections open and none of
 * its attempts has ended: nothing the fast ones got waited for a slot or a connection the
 * silent one held (that wait would end only at the timeout).
 */
const broker = testBrokerPrefix('wh_isolation', removeBrokerPrefix);
const ACC = 'acc_isolation';
const EVENTS = 60;
/** Longer than the test's own waits: a delivery that waited for the silent receiver could not arrive. */
const DELIVERY_TIMEOUT_MS = 600_000;
let hooks: WebhooksHarness;
const fast: Receiver[] = [];

/** Accepts connections and never says a word (the worker waits for its delivery timeout). */
async function startSilentReceiver() {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
let silent: Awaited<ReturnType<typeof startSilentReceiver>>;

beforeAll(async () => {
  hooks = await startWebhooks({
    label: 'wh_isolation',
    prefix: broker.prefix,
    env: { WEBHOOK_TIMEOUT_MS: String(DELIVERY_TIMEOUT_MS) },
  });
  for (let i = 0; i < 9; i++) fast.push(await startReceiver());
  silent = await startSilentReceiver();
  for (const r of fast) await subscribe(`${r.url}/fast`);
});
afterAll(async () => {
  await silent.close();
  await hooks.stop();
  for (const r of fast) await r.close();
  await broker.cleanup();
});

async function subscribe(url: string): Promise<string> {
  const res = await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url, events: ['signal.new'] })
    .expect(201);
  return res.body.data.id as string;
}

describe('slow subscriber isolation', () => {
  it('when one of ten subscribers never responds, then the other nine get every event while its attempts are still held open', async () => {
    const silentId = await subscribe(`${silent.url}/silent`);
    const sent = await publishEvents(broker.prefix, EVENTS);
    await waitFor(
      () => fast.every((r) => r.requests.length >= EVENTS),
      30_000,
      20,
      'every fast receiver to get every event',
    );
    // The silent receiver was being tried and still holds those attempts: none has ended.
    expect(silent.connections()).toBeGreaterThan(0);
    expect(silent.open()).toBeGreaterThan(0);
    const log = await request(hooks.url)
      .get(`/v1/webhooks/${silentId}/deliveries`)
      .set(hooks.auth(ACC))
      .expect(200);
    const silentDeliveries = log.body.data as Array<{ attempts_made: number; status: string }>;
    expect(silentDeliveries.length).toBeGreaterThan(0);
    for (const d of silentDeliveries) expect(d).toMatchObject({ attempts_made: 0, status: 'pending' });
    // And every fast receiver got each event of the burst exactly once.
    for (const r of fast) {
      const ids = r.requests.map((req) => (JSON.parse(req.body) as { data: { id: string } }).data.id);
      expect(new Set(ids)).toEqual(new Set(sent.keys()));
    }
  }, 180_000);
});
