import {
  SIGNAL_STATUSES,
  SIGNAL_TYPES,
  STATUS_TRANSITIONS,
  type SignalDetail,
  type SignalStatus,
  type SignalType,
} from '@signal/contracts';
import { waitFor } from '@signal/test-kit';
import request from 'supertest';
import { startGateway, type GatewayHarness } from '../../api-gateway/test/gateway-harness';
import { listFromStore } from '../src/domain/list-signals.use-case';
import type { SignalQueryStore } from '../src/domain/ports';
import { toDetail, toSnapshot } from '../src/domain/signal.mapper';
import { signalInput, startSignals, type SignalsHarness } from './signals-harness';

/**
 * The model test of the read path: a randomized load of concurrent creates, metric updates and
 * status transitions (with stale and repeated snapshots replayed into the index, and the index
 * lost in the middle), after which every list query through the gateway returns exactly what
 * the MongoDB query returns.
 */
let signals: SignalsHarness;
let gw: GatewayHarness;
let auth: { Authorization: string };

// Seeded, so a failure replays.
let seed = 20261122;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

beforeAll(async () => {
  signals = await startSignals('timeline_model');
  gw = await startGateway({
    label: 'timeline_model',
    upstreams: { signals: signals.url, stats: 'http://127.0.0.1:9', webhooks: 'http://127.0.0.1:9' },
  });
  const { key } = await gw.account({ per_minute: 1_000_000, per_day: 10_000_000 });
  auth = { Authorization: `Bearer ${key}` };
});
afterAll(async () => {
  await gw.stop();
  await signals.stop();
});

const ingest = () => request(signals.url);

async function createMany(n: number, createdAt?: string): Promise<string[]> {
  const body = {
    signals: Array.from({ length: n }, () =>
      signalInput({
        type: pick(SIGNAL_TYPES),
        created_at: createdAt ?? new Date(Date.now() - Math.floor(random() * 40 * 86_400_000)).toISOString(),
      }),
    ),
  };
  const res = await ingest().post('/internal/signals/bulk').set(signals.ingestAuth).send(body).expect(201);
  return res.body.data.ids;
}

async function createOne(): Promise<string> {
  const res = await ingest()
    .post('/internal/signals')
    .set(signals.ingestAuth)
    .send(signalInput({ type: pick(SIGNAL_TYPES) }))
    .expect(201);
  return res.body.data.id;
}

async function moveRandomly(id: string): Promise<void> {
  if (random() < 0.6) {
    await ingest()
      .patch(`/internal/signals/${id}`)
      .set(signals.ingestAuth)
      .send({ metrics: { mcap_current: Math.round(50_000 + random() * 900_000) } })
      .expect(200);
  }
  const current = await signals.deps.repository.findById(id);
  const next = STATUS_TRANSITIONS[current!.performance.status];
  if (next.length > 0 && random() < 0.5) {
    // Concurrent writers may move it first: 409 is a legal response, the model keeps what MongoDB has.
    await ingest()
      .post(`/internal/signals/${id}/status`)
      .set(signals.ingestAuth)
      .send({ status: pick(next) })
      .expect((res) => expect([200, 409]).toContain(res.status));
  }
}

async function load(ids: string[], rounds: number): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    const batch = Array.from({ length: 12 }, () => pick(ids));
    await Promise.all([
      ...batch.map((id) => moveRandomly(id)),
      createOne().then((id) => ids.push(id)),
      createMany(5).then((more) => ids.push(...more)),
    ]);
  }
}

async function settled(): Promise<void> {
  await waitFor(
    async () =>
      (await signals.deps.index.model.isReady()) &&
      (await signals.deps.repository.findPendingOutbox(1)).length === 0 &&
      // On a loaded machine an index update can fail; it is re-applied by the maintenance task.
      !(await signals.deps.indexMaintenance.repairsPending()),
    20_000,
    50,
    'index ready, outbox drained, failed index updates re-applied',
  );
}

interface Combination {
  type?: SignalType;
  status?: SignalStatus;
  since?: string;
  limit: number;
}

function query(c: Combination, extra: Record<string, string | number>): Record<string, string | number> {
  const q: Record<string, string | number> = { limit: c.limit, ...extra };
  if (c.type) q.type = c.type;
  if (c.status) q.status = c.status;
  if (c.since) q.since = c.since;
  return q;
}

/**
 * MongoDB serves every query of the comparisons, but each filter's count is asked once: nothing
 * writes while they run, and FerretDB counts by reading every match.
 */
function countingOnce(store: SignalQueryStore): SignalQueryStore {
  const counts = new Map<string, Promise<number>>();
  return {
    list: (filter, skip, limit) => store.list(filter, skip, limit),
    findById: (id) => store.findById(id),
    count: (filter) => {
      const key = JSON.stringify(filter);
      const known = counts.get(key) ?? store.count(filter);
      counts.set(key, known);
      return known;
    },
  };
}
let storeQueries: SignalQueryStore;

async function expectSameAsStore(c: Combination, extra: Record<string, string | number>) {
  const q = query(c, extra);
  const viaGateway = await request(gw.url).get('/v1/signals').set(auth).query(q).expect(200);
  const cursor = typeof extra.cursor === 'string' ? extra.cursor : undefined;
  const expected = await listFromStore(
    storeQueries,
    {
      type: c.type,
      status: c.status,
      since: c.since,
      limit: c.limit,
      page: typeof extra.page === 'number' ? extra.page : undefined,
      cursor,
    },
    c.limit,
    cursor ? Buffer.from(cursor, 'base64url').toString('utf8') : undefined,
  );
  expect({ query: q, body: viaGateway.body }).toEqual({
    query: q,
    body: { success: true, data: expected.data, meta: expected.meta },
  });
  return viaGateway.body.meta as { next_cursor: string | null; total_pages: number };
}

/** Compares one combination's pages (first, second, last, past the end, three cursor hops). */
async function compareCombination(c: Combination): Promise<number> {
  const first = await expectSameAsStore(c, { page: 1 });
  if (c.limit === 100) return 1;
  await expectSameAsStore(c, { page: 2 });
  await expectSameAsStore(c, { page: Math.max(1, first.total_pages) });
  await expectSameAsStore(c, { page: first.total_pages + 1 });
  let compared = 4;
  // Follow cursors: every page equals the store's keyset page.
  let next = first.next_cursor;
  for (let hops = 0; next && hops < 3; hops++) {
    next = (await expectSameAsStore(c, { cursor: next })).next_cursor;
    compared += 1;
  }
  return compared;
}

/**
 * Every combination of filters and page sizes, four at a time: the index is settled and nothing
 * writes meanwhile, so the order of the comparisons does not matter, and the store's queries
 * overlap instead of queueing one behind another (this test's run time is theirs).
 */
async function compareEveryCombination(sinceValues: (string | undefined)[]): Promise<number> {
  storeQueries = countingOnce(signals.deps.repository);
  const combinations: Combination[] = [];
  for (const type of [undefined, ...SIGNAL_TYPES])
    for (const status of [undefined, ...SIGNAL_STATUSES])
      for (const since of sinceValues)
        for (const limit of [7, 100]) combinations.push({ type, status, since, limit });
  let compared = 0;
  const lanes = Array.from({ length: 4 }, async () => {
    for (let c = combinations.shift(); c; c = combinations.shift()) {
      const n = await compareCombination(c);
      compared += n;
    }
  });
  await Promise.all(lanes);
  return compared;
}

describe('the timeline index against MongoDB', () => {
  it('when signals share a created_at millisecond, then the order is created_at desc then id desc, exactly as the store orders', async () => {
    const sameMs = new Date(Date.now() - 3_600_000).toISOString();
    const ids = await createMany(30, sameMs);
    await settled();
    const res = await request(gw.url)
      .get('/v1/signals')
      .set(auth)
      .query({ since: new Date(Date.parse(sameMs) - 1).toISOString(), limit: 100 })
      .expect(200);
    const listed = (res.body.data as SignalDetail[]).filter((s) => s.created_at === sameMs).map((s) => s.id);
    expect(listed).toEqual([...ids].sort().reverse());
  });

  it('when a randomized concurrent load runs with stale and repeated versions and the index is lost midway, then every query returns what MongoDB returns', async () => {
    const ids = await createMany(120);
    // Remember early snapshots to replay them later, stale, into the index.
    const early = await Promise.all(ids.slice(0, 40).map((id) => signals.deps.repository.findById(id)));
    await load(ids, 6);

    // Redis loses the index mid-load (as a restart or flush would): lists fall back, then rebuild.
    await signals.deps.index.model.clear();
    const duringLoss = await request(gw.url).get('/v1/signals').set(auth).query({ limit: 5 }).expect(200);
    expect(duringLoss.body.meta.total).toBeGreaterThan(0);
    await load(ids, 6);

    // Stale and repeated versions change nothing.
    await settled();
    await signals.deps.index.apply(early.flatMap((d) => (d ? [toSnapshot(d)] : [])));
    const now = await Promise.all(ids.slice(0, 40).map((id) => signals.deps.repository.findById(id)));
    await signals.deps.index.apply(now.flatMap((d) => (d ? [toSnapshot(d)] : [])));

    const all = await signals.deps.repository.count({});
    expect(all).toBeGreaterThan(200);
    const since = new Date(Date.now() - 20 * 86_400_000).toISOString();
    const compared = await compareEveryCombination([undefined, since]);
    expect(compared).toBeGreaterThan(7 * 5 * 2 * 5);

    // Every detail equals the stored document.
    for (const id of ids.slice(0, 60)) {
      const res = await request(gw.url).get(`/v1/signals/${id}`).set(auth).expect(200);
      expect(res.body.data).toEqual(toDetail((await signals.deps.repository.findById(id))!));
    }
  }, 180_000); // a randomized model run: long, and longer on a shared machine
});
