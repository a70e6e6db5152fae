import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { startReceiver, testBrokerPrefix, waitFor, type Receiver } from '@signal/test-kit';
import request from 'supertest';
import { publishEvents } from './bus-events';
import { startWebhooks, type WebhooksHarness } from './webhooks-harness';

/**
 * One slow subscriber cannot slow the others: nine fast receivers, then the same nine beside a
 * tenth that never answers. The fast ones' event→delivery p99 with the silent one stays within
 * 2× of their p99 without it (measured in this test, one run after the other).
 */
const broker = testBrokerPrefix('wh_isolation');
const ACC = 'acc_isolation';
const EVENTS = 60;
const PER_SECOND = 20;
let hooks: WebhooksHarness;
const fast: Receiver[] = [];

/** Accepts connections and never says a word (the worker gives up after its 5 s timeout). */
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
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
let silent: Awaited<ReturnType<typeof startSilentReceiver>>;

beforeAll(async () => {
  hooks = await startWebhooks({ label: 'wh_isolation', prefix: broker.prefix });
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

async function subscribe(url: string) {
  await request(hooks.url)
    .post('/v1/webhooks')
    .set(hooks.auth(ACC))
    .send({ url, events: ['signal.new'] })
    .expect(201);
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))] ?? NaN;
}

/** Publishes a burst and returns the fast receivers' event→delivery latencies for it. */
async function fastLatencies(): Promise<number[]> {
  const before = fast.map((r) => r.requests.length);
  const sent = await publishEvents(broker.prefix, EVENTS, PER_SECOND);
  await waitFor(
    () => fast.every((r, i) => r.requests.length - before[i]! >= EVENTS),
    30_000,
    20,
    'every fast receiver to get every event',
  );
  return fast.flatMap((r, i) =>
    r.requests.slice(before[i]).map((req) => {
      const id = (JSON.parse(req.body) as { data: { id: string } }).data.id;
      return req.receivedAt - sent.get(id)!;
    }),
  );
}

describe('slow subscriber isolation', () => {
  it('when one of ten subscribers never answers, then the other nine are delivered as fast as without it (p99 within 2×)', async () => {
    const alone = await fastLatencies();
    await subscribe(`${silent.url}/silent`);
    const beside = await fastLatencies();
    expect(alone).toHaveLength(9 * EVENTS);
    expect(beside).toHaveLength(9 * EVENTS);
    // The silent one was really being tried (and held) meanwhile.
    expect(silent.connections()).toBeGreaterThan(0);
    // 2× of the first run's p99, floored at 500 ms so that scheduler noise while the rest of the
    // suite runs beside this file on two cores does not decide the outcome; a worker whose slots
    // or connections the silent receiver held would show its 5 s timeout here.
    expect(p99(beside)).toBeLessThanOrEqual(2 * Math.max(p99(alone), 500));
  }, 90_000);
});
