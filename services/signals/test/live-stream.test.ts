import { webhookPayloadSchema } from '@signal/contracts';
import { removeBrokerPrefix } from '@signal/messaging';
import {
  infraUrls,
  startTcpProxy,
  testBrokerPrefix,
  viaProxy,
  waitFor,
  type TcpProxy,
} from '@signal/test-kit';
import request from 'supertest';
import { busEvent, busProducer } from './bus-producer';
import { signalInput, startSignals, type SignalsHarness } from './signals-harness';
import { openSse, openStalled, type SseClient, type SseEvent } from './sse-client';

const STREAM = '/v1/signals/stream';

async function createSignal(svc: SignalsHarness, over: Record<string, unknown> = {}): Promise<string> {
  const res = await request(svc.url)
    .post('/internal/signals')
    .set(svc.ingestAuth)
    .send(signalInput(over))
    .expect(201);
  return res.body.data.id as string;
}

async function setStatus(svc: SignalsHarness, id: string, status: string): Promise<void> {
  await request(svc.url)
    .post(`/internal/signals/${id}/status`)
    .set(svc.ingestAuth)
    .send({ status })
    .expect(200);
}

const auth = (svc: SignalsHarness) => ({ Authorization: `Bearer ${svc.token()}` });
const open = (svc: SignalsHarness, path = STREAM, headers: Record<string, string> = {}) =>
  openSse(svc.url, path, { ...auth(svc), ...headers });

/** The signal id in a stream event's payload (undefined for the stream's own events). */
function signalOf(e: SseEvent): string | undefined {
  if (!e.event.startsWith('signal.')) return undefined;
  return webhookPayloadSchema.parse(JSON.parse(e.data)).data.id;
}
const about = (events: SseEvent[], ids: readonly string[]) =>
  events.filter((e) => ids.includes(signalOf(e) ?? ''));
const has = (events: SseEvent[], name: string, id: string) =>
  events.some((e) => e.event === name && signalOf(e) === id);
/** Are these stream entry ids (`<ms>-<seq>`) strictly increasing? */
function isIncreasing(ids: string[]): boolean {
  const parts = ids.map((id) => id.split('-').map(BigInt));
  return parts.every(([ms = 0n, seq = 0n], i) => {
    if (i === 0) return true;
    const [pms = 0n, pseq = 0n] = parts[i - 1]!;
    return ms > pms || (ms === pms && seq > pseq);
  });
}

describe('live stream', () => {
  const broker = testBrokerPrefix('stream', removeBrokerPrefix);
  let svc: SignalsHarness;
  let producer: Awaited<ReturnType<typeof busProducer>>;
  const clients: SseClient[] = [];
  const track = (c: SseClient) => (clients.push(c), c);

  beforeAll(async () => {
    svc = await startSignals(
      'stream',
      // Short heartbeat and a small bound, so the heartbeat and the overflow show without waiting.
      { STREAM_HEARTBEAT_MS: '100', STREAM_MAX_BUFFERED_BYTES: String(64 * 1024) },
      { prefix: broker.prefix },
    );
    await svc.deps.amqp.waitUntilConnected();
    await waitFor(() => svc.deps.streams.hub.position !== undefined, 10_000, 20, 'the tail to find the log');
    producer = await busProducer(broker.prefix);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
  });
  afterAll(async () => {
    await svc.stop();
    await producer.close();
    await broker.cleanup();
  });

  it('when a stream is opened, then it responds 200 text/event-stream, unbuffered and uncached, starting with a retry hint', async () => {
    const s = track(await open(svc));
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(s.headers['cache-control']).toBe('no-store');
    expect(s.headers['x-accel-buffering']).toBe('no');
    await waitFor(() => s.retry !== undefined, 5000, 20, 'the retry hint');
    expect(s.retry).toBe(2000);
  });

  it('when the stream is asked for with HEAD, then the head comes back and the response ends', async () => {
    const res = await request(svc.url).head(STREAM).set(auth(svc)).expect(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    await waitFor(() => svc.deps.streams.hub.openCount === 0, 5000, 20, 'no stream left open');
  });

  it('when the stream is quiet, then it carries keep-alive comments at the heartbeat interval', async () => {
    const s = track(await open(svc));
    await waitFor(
      () => s.comments.filter((c) => c === 'keep-alive').length >= 2,
      10_000,
      20,
      'two heartbeats',
    );
    expect(s.events).toEqual([]);
  });

  it('when signals are created and move after connecting, then each public event arrives once, in order, with an id and the webhook payload', async () => {
    const s = track(await open(svc));
    const a = await createSignal(svc, { type: 'wallet' });
    await setStatus(svc, a, 'winner');
    const b = await createSignal(svc);
    await setStatus(svc, b, 'rugged');
    await s.until((ev) => has(ev, 'signal.rugged', b), 'the last event');
    const mine = about(s.events, [a, b]);
    expect(mine.map((e) => [e.event, signalOf(e)])).toEqual([
      ['signal.new', a],
      ['signal.winner', a],
      ['signal.new', b],
      ['signal.rugged', b],
    ]);
    expect(isIncreasing(s.events.map((e) => e.id ?? ''))).toBe(true);
    const [created, won] = mine.map((e) => webhookPayloadSchema.parse(JSON.parse(e.data)));
    expect(created).toMatchObject({
      event: 'signal.new',
      data: { id: a, type: 'wallet', is_premium: false },
    });
    expect(created!.data).not.toHaveProperty('performance');
    expect(won).toMatchObject({ event: 'signal.winner', data: { id: a, performance: { status: 'winner' } } });
  });

  it('when a stream filters by type and events, then it receives only the matching events', async () => {
    const all = track(await open(svc));
    const some = track(await open(svc, `${STREAM}?type=wallet,premium&events=signal.new,signal.winner`));
    const other = await createSignal(svc, { type: '3d' });
    const w2 = await createSignal(svc, { type: 'wallet' });
    await setStatus(svc, w2, 'dead');
    const w1 = await createSignal(svc, { type: 'wallet' });
    await setStatus(svc, w1, 'winner');
    await some.until((ev) => has(ev, 'signal.winner', w1), "the filtered stream's last event");
    await all.until((ev) => has(ev, 'signal.winner', w1), 'every event');
    expect(about(some.events, [other, w1, w2]).map((e) => [e.event, signalOf(e)])).toEqual([
      ['signal.new', w2],
      ['signal.new', w1],
      ['signal.winner', w1],
    ]);
    expect(about(all.events, [other, w1, w2])).toHaveLength(5);
  });

  it('when a client reconnects with Last-Event-ID while events keep coming, then it receives every event it missed and the live ones, none twice', async () => {
    const reference = track(await open(svc));
    const first = track(await open(svc));
    const ids = [await createSignal(svc), await createSignal(svc)];
    await first.until((ev) => about(ev, ids).length === 2, 'the first two events');
    first.close();
    const lastSeen = first.lastEventId!;
    for (let i = 0; i < 5; i++) ids.push(await createSignal(svc));
    await reference.until((ev) => about(ev, ids).length === 7, 'the missed events to be logged');

    // Events published while the resumed stream replays and joins the live fan-out.
    const publishing = (async () => {
      for (let i = 0; i < 10; i++) ids.push(await createSignal(svc));
    })();
    const second = track(await open(svc, STREAM, { 'Last-Event-ID': lastSeen }));
    await publishing;
    await reference.until((ev) => about(ev, ids).length === 17, 'all events');
    const last = about(reference.events, ids).at(-1)!;
    await second.until((ev) => ev.some((e) => e.id === last.id), 'the resumed stream to catch up');

    // Together the two connections saw exactly what a client connected all along saw.
    const seen = [...first.events, ...second.events].map((e) => e.id);
    const expected = reference.events.map((e) => e.id);
    const from = expected.indexOf(first.events[0]!.id);
    const to = expected.indexOf(last.id);
    expect(seen).toEqual(expected.slice(from, to + 1));
    expect(isIncreasing(seen.map(String))).toBe(true);
    expect(about(second.events, ids.slice(0, 2))).toEqual([]);
    // Each missed and live signal once. In the log's order, which is the relay's: signals created
    // one after another can be published in another order on a loaded machine.
    expect(about(second.events, ids.slice(2)).map(signalOf).sort()).toEqual(ids.slice(2).sort());
  });

  it('when the gateway catches a client up (until=live), then the log after the position is replayed and the stream ends with caught-up naming the last id', async () => {
    const reference = track(await open(svc));
    const ids = [await createSignal(svc)];
    await reference.until((ev) => about(ev, ids).length === 1, 'the first event');
    const position = about(reference.events, ids)[0]!.id!;
    for (let i = 0; i < 3; i++) ids.push(await createSignal(svc));
    await reference.until((ev) => about(ev, ids).length === 4, 'the later events');
    const catchUp = track(await open(svc, `${STREAM}?until=live`, { 'Last-Event-ID': position }));
    await catchUp.whenEnded();
    const replayed = catchUp.events.filter((e) => e.event !== 'caught-up');
    expect(replayed.map(signalOf)).toEqual(ids.slice(1));
    const end = catchUp.events.at(-1)!;
    expect(end.event).toBe('caught-up');
    expect(end.id).toBeUndefined();
    expect(end.data).toBe(reference.events.at(-1)!.id);
  });

  it('when a client asks for an unknown value of until, then 400 names it', async () => {
    const res = await request(svc.url).get(`${STREAM}?until=later`).set(auth(svc));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('when a client resumes behind more events than one replay page, then it receives them all in order, then live ones', async () => {
    const reference = track(await open(svc));
    const s = track(await open(svc));
    const first = busEvent('signal.new');
    await producer.publish(first);
    await s.until((ev) => has(ev, 'signal.new', first.signal.id), 'the first event');
    s.close();
    const missed: string[] = [];
    const batch = Array.from({ length: 250 }, (_, i) => busEvent(i % 2 ? 'signal.winner' : 'signal.new'));
    for (const e of batch) missed.push(e.signal.id);
    await producer.publishAll(batch);
    await reference.until((ev) => about(ev, missed).length === 250, 'the missed events to be logged');
    const resumed = track(await open(svc, STREAM, { 'Last-Event-ID': s.lastEventId! }));
    const live = busEvent('signal.dead');
    await producer.publish(live);
    await resumed.until((ev) => has(ev, 'signal.dead', live.signal.id), 'the live event after the replay');
    expect(about(resumed.events, [...missed, live.signal.id]).map(signalOf)).toEqual([
      ...missed,
      live.signal.id,
    ]);
    expect(isIncreasing(resumed.events.map((e) => e.id!))).toBe(true);
  });

  it('when a client without EventSource resumes with last_event_id in the query, then it receives what came after that id', async () => {
    const s = track(await open(svc));
    const a = await createSignal(svc);
    await s.until((ev) => has(ev, 'signal.new', a), 'the first event');
    const after = s.lastEventId!;
    const b = await createSignal(svc);
    await s.until((ev) => has(ev, 'signal.new', b), 'the second event');
    s.close();
    const resumed = track(await open(svc, `${STREAM}?last_event_id=${after}&events=signal.new`));
    await resumed.until((ev) => has(ev, 'signal.new', b), 'the replayed event');
    expect(about(resumed.events, [a, b]).map(signalOf)).toEqual([b]);
  });

  it.each([
    ['malformed', 'not-an-id'],
    ['unknown', '99999999999999-7'],
    ['expired', '1-0'],
  ])(
    'when Last-Event-ID is %s, then the stream sends one reset naming the list to re-sync from, then goes on live',
    async (reason, lastEventId) => {
      const s = track(await open(svc, STREAM, { 'Last-Event-ID': lastEventId }));
      await s.until((ev) => ev.length >= 1, 'the reset');
      expect(s.events[0]!.event).toBe('reset');
      expect(JSON.parse(s.events[0]!.data)).toMatchObject({ reason, resync: '/v1/signals' });
      expect(s.events[0]!.id).toMatch(/^\d+-\d+$/);
      const next = await createSignal(svc);
      await s.until((ev) => has(ev, 'signal.new', next), 'the live event after the reset');
      expect(s.events.filter((e) => e.event === 'reset')).toHaveLength(1);
      expect(about(s.events, [next]).map((e) => e.event)).toEqual(['signal.new']);
    },
  );

  it('when the event of a Last-Event-ID was trimmed from the log, then the stream resets as expired', async () => {
    const s = track(await open(svc));
    const a = await createSignal(svc);
    const b = await createSignal(svc);
    await s.until((ev) => has(ev, 'signal.new', b), 'two events');
    s.close();
    const aId = s.events.find((e) => signalOf(e) === a)!.id!;
    const bId = s.events.find((e) => signalOf(e) === b)!.id!;
    // What retention does a day later: everything before b is trimmed away.
    await svc.deps.redis.xtrim(`${svc.config.REDIS_PREFIX}signal-events:stream`, 'MINID', bId);
    const resumed = track(await open(svc, STREAM, { 'Last-Event-ID': aId }));
    await resumed.until((ev) => ev.length >= 1, 'the reset');
    expect(resumed.events[0]).toMatchObject({ event: 'reset' });
    expect(JSON.parse(resumed.events[0]!.data)).toMatchObject({ reason: 'expired' });
  });

  it('when the broker delivers the same bus event twice, then the stream carries it once', async () => {
    const s = track(await open(svc));
    const twice = busEvent('signal.new');
    await producer.publish(twice);
    await producer.publish(twice);
    const after = busEvent('signal.new');
    await producer.publish(after);
    await s.until((ev) => has(ev, 'signal.new', after.signal.id), 'the event after the duplicate');
    expect(about(s.events, [twice.signal.id])).toHaveLength(1);
  });

  it('when signal.updated is on the bus, then the stream does not carry it', async () => {
    const s = track(await open(svc));
    const updated = busEvent('signal.updated');
    await producer.publish(updated);
    const marker = busEvent('signal.dead');
    await producer.publish(marker);
    await s.until((ev) => has(ev, 'signal.dead', marker.signal.id), 'the marker');
    expect(about(s.events, [updated.signal.id])).toEqual([]);
  });

  it.each([
    ['type=wallet,bogus', 'type: "bogus" is not one of'],
    ['events=signal.updated', 'events: "signal.updated" is not one of'],
    ['type=', 'type must be a comma-separated list'],
    ['types=wallet', 'unknown parameter: types (did you mean type?)'],
    ['type=new&type=3d', 'type must be given once'],
  ])('when the query is %s, then 400 VALIDATION_ERROR names the problem', async (query, message) => {
    const res = await request(svc.url).get(`${STREAM}?${query}`).set(auth(svc)).expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(message);
  });

  it('when the internal token is missing, then 401 and no stream', async () => {
    const res = await request(svc.url).get(STREAM).expect(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('when a client stops reading, then its stream ends with overflow once the bound is passed', async () => {
    const hub = svc.deps.streams.hub;
    await waitFor(() => hub.openCount === 0, 5000, 20, "the other tests' streams to close");
    const stalled = await openStalled(svc.url, STREAM, auth(svc));
    await waitFor(() => hub.openCount === 1, 5000, 20, 'the stream to open');
    // Events of 60 KB each, by rounds until the stream ends: the loopback socket buffers take a
    // few MB before anything stays in the server, then the 64 KiB bound is passed.
    const published: string[] = [];
    for (let round = 0; round < 80 && hub.openCount === 1; round++) {
      const batch = Array.from({ length: 10 }, () =>
        busEvent('signal.new', { tokenName: 'x'.repeat(60_000) }),
      );
      published.push(...batch.map((e) => e.signal.id));
      await producer.publishAll(batch);
      // A pause between rounds (not a wait for the end: more rounds may be needed first).
      for (let i = 0; i < 25 && hub.openCount === 1; i++) await new Promise((r) => setTimeout(r, 20));
    }
    expect(hub.openCount).toBe(0);
    await stalled.readToEnd();
    const received = stalled.events.filter((e) => e.event === 'signal.new');
    expect(stalled.events.at(-1)).toMatchObject({ event: 'overflow' });
    expect(stalled.events.at(-1)!.id).toBeUndefined();
    expect(JSON.parse(stalled.events.at(-1)!.data)).toMatchObject({ reason: 'slow_client' });
    // What it did receive has no gap: a resume with its last id picks up the rest.
    expect(received.map(signalOf)).toEqual(published.slice(0, received.length));
  });

  it('when another replica serves a stream, then it receives the events ingested through the first, each once', async () => {
    const replica = await startSignals(
      'stream_b',
      { REDIS_PREFIX: svc.config.REDIS_PREFIX },
      { prefix: broker.prefix, dbName: svc.config.SIGNALS_DB },
    );
    try {
      await waitFor(() => replica.deps.streams.hub.position !== undefined, 10_000, 20, 'the replica tail');
      const there = openSse(replica.url, STREAM, { Authorization: `Bearer ${replica.token()}` });
      const s = track(await there);
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await createSignal(svc));
      await s.until((ev) => about(ev, ids).length >= 10, 'ten events on the replica');
      expect(about(s.events, ids).map(signalOf).sort()).toEqual([...ids].sort());
    } finally {
      await replica.stop();
    }
  });

  it('when the service shuts down, then each open stream ends with a reconnect event', async () => {
    const s = track(await open(svc));
    const a = await createSignal(svc);
    await s.until((ev) => has(ev, 'signal.new', a), 'an event');
    await svc.stop();
    await s.whenEnded();
    expect(s.events.at(-1)).toMatchObject({ event: 'reconnect' });
    expect(s.events.at(-1)!.id).toBeUndefined();
    expect(s.lastEventId).toBe(s.events.find((e) => signalOf(e) === a)!.id);
  });
});

describe('live stream across a Redis outage', () => {
  let proxy: TcpProxy;
  let svc: SignalsHarness;

  beforeAll(async () => {
    const redis = new URL(infraUrls().redisUrl);
    proxy = await startTcpProxy(redis.hostname, Number(redis.port || 6379));
    svc = await startSignals('stream_blip', { REDIS_URL: viaProxy(infraUrls().redisUrl, proxy) });
    await svc.deps.amqp.waitUntilConnected();
    await waitFor(() => svc.deps.streams.hub.position !== undefined, 10_000, 20, 'the tail to find the log');
  });
  afterAll(async () => {
    proxy.restore();
    await svc.stop();
    await proxy.close();
  });

  it('when Redis drops while a stream is open, then the stream stays open and receives the events of during and after the outage, in order', async () => {
    const s = await open(svc);
    try {
      const before = await createSignal(svc);
      await s.until((ev) => has(ev, 'signal.new', before), 'the first event');
      proxy.cut();
      const during = await createSignal(svc);
      proxy.restore();
      const after = await createSignal(svc);
      await s.until(
        (ev) => has(ev, 'signal.new', after) && has(ev, 'signal.new', during),
        'the later events',
      );
      expect(s.ended).toBe(false);
      const seen = about(s.events, [before, during, after]).map(signalOf);
      expect(seen).toHaveLength(3);
      expect(seen[0]).toBe(before);
      expect(new Set(seen)).toEqual(new Set([before, during, after]));
    } finally {
      s.close();
    }
  });

  it('when Redis is unreachable as a client resumes, then 503 with Retry-After, and the resume works once it is back', async () => {
    const s = await open(svc);
    const a = await createSignal(svc);
    await s.until((ev) => has(ev, 'signal.new', a), 'an event');
    s.close();
    proxy.cut();
    try {
      const res = await request(svc.url)
        .get(STREAM)
        .set(auth(svc))
        .set('Last-Event-ID', s.lastEventId!)
        .expect(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(res.headers['retry-after']).toBe('1');
    } finally {
      proxy.restore();
    }
    const b = await createSignal(svc);
    const resumed = await waitFor(
      async () => {
        const r = await open(svc, STREAM, { 'Last-Event-ID': s.lastEventId! });
        if (r.status === 200) return r;
        r.close();
        return undefined;
      },
      10_000,
      100,
      'Redis to be back',
    );
    try {
      await resumed.until((ev) => has(ev, 'signal.new', b), 'the event created meanwhile');
      expect(about(resumed.events, [a, b]).map(signalOf)).toEqual([b]);
    } finally {
      resumed.close();
    }
  });
});
