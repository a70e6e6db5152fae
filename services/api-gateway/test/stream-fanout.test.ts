import { webhookPayloadSchema, type SignalEvent, type SignalType } from '@signal/contracts';
import { removeBrokerPrefix } from '@signal/messaging';
import { metrics } from '@signal/service-kit';
import { startTcpProxy, testBrokerPrefix, viaProxy, waitFor, type TcpProxy } from '@signal/test-kit';
import { busEvent, busProducer } from '../../signals/test/bus-producer';
import { startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { openSse, openStalled, type SseClient, type SseEvent } from '../../signals/test/sse-client';
import { startGateway, type GatewayHarness } from './gateway-harness';

/**
 * Live streams fanned out by the gateway: the streams of one gateway process share one stream
 * from the signals service (its feed), each client gets what its filter wants, and neither a cut
 * to the signals service nor a client resuming while events are published loses or repeats one.
 * Real signals service, broker and Redis; the clients go through the gateway's HTTP API.
 */

/** The signal ids of a stream's signal events, in the order received. */
const signalIds = (events: SseEvent[]): string[] =>
  events
    .filter((e) => e.event.startsWith('signal.'))
    .map((e) => webhookPayloadSchema.parse(JSON.parse(e.data)).data.id);

const STREAM = '/v1/signals/stream';

describe('live streams fanned out by the gateway', () => {
  const broker = testBrokerPrefix('fanout', removeBrokerPrefix);
  let signals: SignalsHarness;
  let proxy: TcpProxy;
  let gw: GatewayHarness;
  let producer: Awaited<ReturnType<typeof busProducer>>;
  let key: string;
  const clients: SseClient[] = [];
  const open = async (path = STREAM, headers: Record<string, string> = {}) => {
    const c = await openSse(gw.url, path, { Authorization: `Bearer ${key}`, ...headers });
    clients.push(c);
    return c;
  };
  /** Publishes `n` signal.new events of `type`; their signal ids. */
  const publish = async (
    n: number,
    name: SignalEvent['name'] = 'signal.new',
    type: SignalType = 'premium',
  ) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const event = busEvent(name, { type });
      ids.push(event.signal.id);
      await producer.publish(event);
    }
    return ids;
  };
  /** Publishes one event and waits until every client has it: the clients are all live. */
  const allLive = async (streams: SseClient[]) => {
    const [id] = await publish(1);
    await waitFor(
      () => streams.every((s) => signalIds(s.events).includes(id!)),
      20_000,
      20,
      'every client live',
    );
  };

  beforeAll(async () => {
    signals = await startSignals('fanout', { STREAM_HEARTBEAT_MS: '200' }, { prefix: broker.prefix });
    await signals.deps.amqp.waitUntilConnected();
    await waitFor(
      () => signals.deps.streams.hub.position !== undefined,
      10_000,
      20,
      'the tail to find the log',
    );
    const upstream = new URL(signals.url);
    proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    gw = await startGateway({
      label: 'gw_fanout',
      upstreams: { signals: viaProxy(signals.url, proxy), stats: signals.url, webhooks: signals.url },
    });
    ({ key } = await gw.account({ per_minute: 600, per_day: 100_000, max_streams: 50 }));
    producer = await busProducer(broker.prefix);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
  });
  afterAll(async () => {
    await gw.stop();
    await proxy.close();
    await producer.close();
    await signals.stop();
    await broker.cleanup();
  });

  it('when many clients open streams on one gateway, then the signals service serves one stream and each client gets every event once', async () => {
    const streams: SseClient[] = [];
    for (let i = 0; i < 12; i++) streams.push(await open());
    expect(streams.every((s) => s.status === 200)).toBe(true);
    expect(streams[0]!.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(streams[0]!.headers['cache-control']).toBe('no-store');
    expect(streams[0]!.headers['x-accel-buffering']).toBe('no');
    await allLive(streams);
    const ids = await publish(5);
    await waitFor(
      () => streams.every((s) => ids.every((id) => signalIds(s.events).includes(id))),
      20_000,
      20,
      'the events',
    );
    for (const s of streams) {
      const got = signalIds(s.events);
      expect(got.slice(got.indexOf(ids[0]!))).toEqual(ids);
      expect(s.retry).toBe(2000);
    }
    expect(signals.deps.streams.hub.openCount).toBe(1);
  });

  it('when clients filter by type and by event on the shared feed, then each gets exactly the events its filter takes', async () => {
    const all = await open();
    const fresh = await open(`${STREAM}?type=wallet`);
    const winners = await open(`${STREAM}?events=signal.winner,signal.dead`);
    const both = await open(`${STREAM}?type=premium&events=signal.winner`);
    await allLive([all]);
    const [premiumNew] = await publish(1, 'signal.new', 'premium');
    const [freshNew] = await publish(1, 'signal.new', 'wallet');
    const [premiumWinner] = await publish(1, 'signal.winner', 'premium');
    const [freshDead] = await publish(1, 'signal.dead', 'wallet');
    await waitFor(() => signalIds(all.events).includes(freshDead!), 20_000, 20, 'the last event');
    const after = (s: SseClient) => {
      const got = signalIds(s.events);
      const from = got.findIndex((id) => [premiumNew, freshNew, premiumWinner, freshDead].includes(id));
      return from < 0 ? [] : got.slice(from);
    };
    await waitFor(() => after(fresh).includes(freshDead!), 20_000, 20, 'the wallet stream');
    await waitFor(() => after(winners).includes(freshDead!), 20_000, 20, 'the winners stream');
    await waitFor(() => after(both).includes(premiumWinner!), 20_000, 20, 'the premium winners stream');
    expect(after(all)).toEqual([premiumNew, freshNew, premiumWinner, freshDead]);
    expect(after(fresh)).toEqual([freshNew, freshDead]);
    expect(after(winners)).toEqual([premiumWinner, freshDead]);
    expect(after(both)).toEqual([premiumWinner]);
  });

  it('when a filter is not valid, then the 400 names it as the signals service did', async () => {
    const bad = await open(`${STREAM}?type=premium,nope&extra=1`);
    expect(bad.status).toBe(400);
    const body: unknown = JSON.parse(bad.body);
    expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(bad.body).toContain('type: \\"nope\\" is not one of');
    expect(bad.body).toContain('unknown parameter: extra');
    // The singular of a list parameter is named for what it is.
    const singular = await open(`${STREAM}?event=signal.new`);
    expect(singular.status).toBe(400);
    expect(singular.body).toContain('unknown parameter: event (did you mean events?)');
    // A parameter after a thousand others is read too.
    const late = await open(`${STREAM}?${'&'.repeat(1000)}type=bogus`);
    expect(late.status).toBe(400);
    expect(late.body).toContain('type: \\"bogus\\" is not one of');
  });

  it('when the connection to the signals service is cut mid-stream, then the clients see every event once, in order', async () => {
    const streams = [await open(), await open(`${STREAM}?events=signal.new`)];
    await allLive(streams);
    const before = await publish(3);
    proxy.cut();
    const during = await publish(4);
    proxy.restore();
    const later = await publish(3);
    const ids = [...before, ...during, ...later];
    await waitFor(
      () => streams.every((s) => signalIds(s.events).includes(later[2]!)),
      20_000,
      20,
      'the events',
    );
    for (const s of streams) {
      const got = signalIds(s.events);
      expect(got.slice(got.indexOf(ids[0]!))).toEqual(ids);
    }
  });

  it('when a client stops reading, then the gateway ends its stream with overflow once the bound is passed, and the others go on', async () => {
    const slowReaders = async () =>
      (await metrics.fairnessRefusals().get()).values.find((v) => v.labels.reason === 'slow_reader')?.value ??
      0;
    const bounded = await startGateway({
      label: 'gw_fanout_bound',
      upstreams: { signals: signals.url, stats: signals.url, webhooks: signals.url },
      env: { STREAM_MAX_BUFFERED_BYTES: String(64 * 1024) },
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
    });
    try {
      const reading = await openSse(bounded.url, STREAM, { Authorization: `Bearer ${key}` });
      clients.push(reading);
      const stalled = await openStalled(bounded.url, STREAM, { Authorization: `Bearer ${key}` });
      await allLive([reading]);
      const cutBefore = await slowReaders();
      // Events of 60 KB each, by rounds until the stream ends: the loopback socket buffers take a
      // few MB before anything stays in the gateway, then the 64 KiB bound is passed.
      const published: string[] = [];
      for (let round = 0; round < 80 && (await slowReaders()) === cutBefore; round++) {
        for (let i = 0; i < 10; i++) {
          const event = busEvent('signal.new', { type: 'premium', tokenName: 'x'.repeat(60_000) });
          published.push(event.signal.id);
          await producer.publish(event);
        }
        // A pause between rounds (not a wait for the cut: more rounds may be needed first).
        for (let i = 0; i < 25 && (await slowReaders()) === cutBefore; i++)
          await new Promise((r) => setTimeout(r, 20));
      }
      expect(await slowReaders()).toBe(cutBefore + 1);
      await stalled.readToEnd();
      const received = signalIds(stalled.events).filter((id) => published.includes(id));
      expect(stalled.events.at(-1)).toMatchObject({ event: 'overflow' });
      expect(JSON.parse(stalled.events.at(-1)!.data)).toMatchObject({ reason: 'slow_client' });
      expect(received).toEqual(published.slice(0, received.length));
      await waitFor(
        () => signalIds(reading.events).includes(published.at(-1)!),
        20_000,
        20,
        'the reading client',
      );
    } finally {
      await bounded.stop();
    }
  });

  it('when a resuming client stops reading during its catch-up and no new event comes, then it is sent overflow and cut at the same bound', async () => {
    const slowReaders = async () =>
      (await metrics.fairnessRefusals().get()).values.find((v) => v.labels.reason === 'slow_reader')?.value ??
      0;
    const bounded = await startGateway({
      label: 'gw_fanout_catch_up',
      upstreams: { signals: signals.url, stats: signals.url, webhooks: signals.url },
      env: { STREAM_MAX_BUFFERED_BYTES: String(64 * 1024) },
      share: { dbName: gw.config.GATEWAY_DB, redisPrefix: gw.config.REDIS_PREFIX },
    });
    try {
      const first = await open();
      await allLive([first]);
      const [mark] = await publish(1);
      await waitFor(() => signalIds(first.events).includes(mark!), 20_000, 20, 'the mark');
      const position = first.events.find((e) => signalIds([e])[0] === mark)!.id!;
      // A log to catch up on far past the loopback socket buffers and the 64 KiB bound.
      const logged: string[] = [];
      for (let i = 0; i < 150; i++) {
        const event = busEvent('signal.new', { type: 'premium', tokenName: 'x'.repeat(60_000) });
        logged.push(event.signal.id);
        await producer.publish(event);
      }
      await waitFor(() => signalIds(first.events).includes(logged.at(-1)!), 30_000, 20, 'the log written');
      const cutBefore = await slowReaders();
      const stalled = await openStalled(bounded.url, STREAM, {
        Authorization: `Bearer ${key}`,
        'Last-Event-ID': position,
      });
      // No event is published from here on: only the catch-up can pass the bound.
      await waitFor(
        async () => (await slowReaders()) > cutBefore,
        30_000,
        20,
        'the stalled catch-up to be cut',
      );
      await stalled.readToEnd();
      expect(stalled.events.at(-1)).toMatchObject({ event: 'overflow' });
      const received = signalIds(stalled.events);
      expect(received.length).toBeLessThan(logged.length);
      expect(received).toEqual(logged.slice(0, received.length));
    } finally {
      await bounded.stop();
    }
  });

  it('when clients resume with Last-Event-ID while events are published, then each gets every event after its position once, in order', async () => {
    const first = await open();
    await allLive([first]);
    const seen = await publish(3);
    await waitFor(() => signalIds(first.events).includes(seen[2]!), 20_000, 20, 'the first events');
    const position = first.events.find((e) => signalIds([e])[0] === seen[0])!.id!;
    first.close();
    const missed = await publish(5);
    // Several resume one after another while events keep coming: a replay may read the log ahead
    // of the gateway's feed, or behind it.
    const publishing = publish(20);
    const resumed: SseClient[] = [];
    for (let i = 0; i < 5; i++) resumed.push(await open(STREAM, { 'Last-Event-ID': position }));
    const during = await publishing;
    const later = await publish(2);
    await waitFor(
      () => resumed.every((r) => signalIds(r.events).includes(later[1]!)),
      20_000,
      20,
      'the resumed streams',
    );
    for (const r of resumed) {
      expect(signalIds(r.events)).toEqual([...seen.slice(1), ...missed, ...during, ...later]);
      const ids = r.events.filter((e) => e.id !== undefined).map((e) => e.id!);
      expect(new Set(ids).size).toBe(ids.length);
    }
    // Caught up, they are on the gateway's feed: the service holds no stream for them.
    expect(signals.deps.streams.hub.openCount).toBe(1);
  });

  it('when a client resumes with a filter and last_event_id in the query, then it gets the matching events after its position, then live ones', async () => {
    const first = await open();
    await allLive([first]);
    const [mark] = await publish(1);
    await waitFor(() => signalIds(first.events).includes(mark!), 20_000, 20, 'the mark');
    const position = first.events.find((e) => signalIds([e])[0] === mark)!.id!;
    const [winner] = await publish(1, 'signal.winner');
    await publish(2);
    const resumed = await open(
      `${STREAM}?events=signal.winner&last_event_id=${encodeURIComponent(position)}`,
    );
    const [liveWinner] = await publish(1, 'signal.winner');
    await waitFor(() => signalIds(resumed.events).includes(liveWinner!), 20_000, 20, 'the live winner');
    expect(signalIds(resumed.events)).toEqual([winner, liveWinner]);
  });

  it('when a client resumes from an id the log does not hold, then it is told to reset and goes on live', async () => {
    const resumed = await open(STREAM, { 'Last-Event-ID': '1-1' });
    const [id] = await publish(1);
    await waitFor(() => signalIds(resumed.events).includes(id!), 20_000, 20, 'the live event');
    expect(resumed.events[0]!.event).toBe('reset');
    expect(JSON.parse(resumed.events[0]!.data)).toMatchObject({ reason: 'expired', resync: '/v1/signals' });
    expect(resumed.events.filter((e) => e.event === 'reset')).toHaveLength(1);
  });
});
