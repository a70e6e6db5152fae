import {
  SIGNAL_TYPES,
  STATS_PERIODS,
  statsResponseSchema,
  type SignalDetail,
  type SignalType,
  type Statistics,
  type StatsPeriod,
} from '@signal/contracts';
import { removeBrokerPrefix, brokerNames } from '@signal/messaging';
import { infraUrls, testBrokerPrefix, waitFor } from '@signal/test-kit';
import { connect } from 'amqplib';
import request from 'supertest';
import { signalInput, startSignals, type SignalsHarness } from '../../signals/test/signals-harness';
import { startStats, type StatsHarness } from './stats-harness';

const broker = testBrokerPrefix('stats', removeBrokerPrefix);
let signals: SignalsHarness;
let stats: StatsHarness;
const HOUR = 3_600_000;

beforeAll(async () => {
  stats = await startStats('stats', broker.prefix);
  signals = await startSignals('stats_signals', {}, { prefix: broker.prefix });
});
afterAll(async () => {
  await signals.stop();
  await stats.stop();
  await broker.cleanup();
});

const getStats = (qs = '') => request(stats.url).get(`/v1/stats${qs}`).set(stats.auth);

async function allSignals(): Promise<SignalDetail[]> {
  const out: SignalDetail[] = [];
  for (let page = 1; ; page++) {
    const res = await request(signals.url)
      .get(`/v1/signals?limit=100&page=${page}`)
      .set('Authorization', `Bearer ${signals.token()}`)
      .expect(200);
    out.push(...res.body.data);
    if (page >= res.body.meta.total_pages) return out;
  }
}

/** Independent reference: straight from the signals API's data, computed the obvious way. */
function reference(all: SignalDetail[], type: SignalType | undefined, period: StatsPeriod): Statistics {
  const bound = { '24h': 24 * HOUR, '7d': 168 * HOUR, '30d': 720 * HOUR, all: Infinity }[period];
  const now = Date.now();
  const rows = all.filter((s) => (!type || s.type === type) && now - Date.parse(s.created_at) < bound);
  const r2 = (n: number) => Math.round(n * 100) / 100;
  const pct = (w: number, t: number) => (t ? r2((w / t) * 100) : 0);
  const winners = rows.filter((s) => s.performance.status === 'winner').length;
  // by_type: every type's own figures for the period, whatever `type` filters.
  const inPeriod = all.filter((s) => now - Date.parse(s.created_at) < bound);
  const by_type = Object.fromEntries(
    SIGNAL_TYPES.map((t) => {
      const ofType = inPeriod.filter((s) => s.type === t);
      const w = ofType.filter((s) => s.performance.status === 'winner').length;
      return [t, { total: ofType.length, winners: w, win_rate: pct(w, ofType.length) }];
    }),
  ) as Statistics['by_type'];
  return {
    total_signals: rows.length,
    winners,
    win_rate: pct(winners, rows.length),
    avg_roi: rows.length ? r2(rows.reduce((a, s) => a + s.performance.roi, 0) / rows.length) : 0,
    best_roi: rows.length ? r2(Math.max(...rows.map((s) => s.performance.roi))) : 0,
    by_type,
  };
}

describe('GET /v1/stats', () => {
  it('when there are no signals, then every figure is zero and every type is present', async () => {
    const res = await getStats().expect(200);
    const { data } = statsResponseSchema.parse(res.body);
    expect(data).toMatchObject({ total_signals: 0, winners: 0, win_rate: 0, avg_roi: 0, best_roi: 0 });
    expect(Object.keys(data.by_type).sort()).toEqual([...SIGNAL_TYPES].sort());
  });

  it('when a known mix of signals exists, then every (type, period) matches the reference computation', async () => {
    // 30 signals: ages from 1 h to 45 days, types rotating (30d never used), statuses and ROIs varied.
    const ages = [1, 5, 20, 30, 50, 100, 160, 200, 400, 700, 800, 1000];
    const types: SignalType[] = ['new', '3d', '7d', 'wallet', 'premium'];
    // The 30 are written side by side (each one's steps in order): the figures do not depend on
    // which signal is written first.
    const write = async (i: number) => {
      const created = await request(signals.url)
        .post('/internal/signals')
        .set(signals.ingestAuth)
        .send(
          signalInput({
            type: types[i % types.length],
            created_at: new Date(Date.now() - ages[i % ages.length]! * HOUR).toISOString(),
          }),
        )
        .expect(201);
      const id = created.body.data.id as string;
      await request(signals.url)
        .patch(`/internal/signals/${id}`)
        .set(signals.ingestAuth)
        .send({ performance: { roi: ((i * 37) % 400) - 90 } })
        .expect(200);
      const status = ['winner', 'dead', 'rugged', null][i % 4];
      if (status)
        await request(signals.url)
          .post(`/internal/signals/${id}/status`)
          .set(signals.ingestAuth)
          .send({ status })
          .expect(200);
    };
    await Promise.all(Array.from({ length: 30 }, (_, i) => write(i)));
    const all = await allSignals();
    const expected = reference(all, undefined, 'all');
    await waitFor(
      async () => {
        const d = (await getStats()).body.data;
        return d?.avg_roi === expected.avg_roi && d?.winners === expected.winners;
      },
      60_000,
      500,
      'the projection to catch up',
    );

    const expectEveryResponseIsTheReference = async () => {
      for (const type of [undefined, ...SIGNAL_TYPES]) {
        for (const period of STATS_PERIODS) {
          const qs = `?period=${period}${type ? `&type=${type}` : ''}`;
          const res = await getStats(qs).expect(200);
          expect({ qs, data: statsResponseSchema.parse(res.body).data }).toEqual({
            qs,
            data: reference(all, type, period),
          });
        }
      }
    };
    expect(await stats.deps.aggregates.model.isReady()).toBe(true);
    await expectEveryResponseIsTheReference();
    expect((await getStats('?type=30d')).body.data.total_signals).toBe(0);

    // Redis loses the aggregates: responses come from the projection, then from the rebuilt model.
    await stats.deps.aggregates.model.clear();
    await expectEveryResponseIsTheReference();
    await waitFor(() => stats.deps.aggregates.model.isReady(), 30_000, 50, 'the aggregates to be rebuilt');
    await expectEveryResponseIsTheReference();
  }, 180_000); // a few hundred requests: long on a loaded machine

  it('when a signal becomes a winner, then the counts move within a few seconds', async () => {
    const before = (await getStats()).body.data as Statistics;
    const created = await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput({ type: 'new' }))
      .expect(201);
    await request(signals.url)
      .post(`/internal/signals/${created.body.data.id}/status`)
      .set(signals.ingestAuth)
      .send({ status: 'winner' })
      .expect(200);
    await waitFor(
      async () => (await getStats()).body.data.winners === before.winners + 1,
      30_000,
      100,
      'the winner to count',
    );
    const after = (await getStats()).body.data as Statistics;
    expect(after.total_signals).toBe(before.total_signals + 1);
    expect(after.by_type.new.winners).toBe(before.by_type.new.winners + 1);
  });

  it('when events are duplicated or arrive out of order, then nothing changes', async () => {
    const created = await request(signals.url)
      .post('/internal/signals')
      .set(signals.ingestAuth)
      .send(signalInput({ type: 'wallet' }))
      .expect(201);
    const id = created.body.data.id as string;
    await request(signals.url)
      .post(`/internal/signals/${id}/status`)
      .set(signals.ingestAuth)
      .send({ status: 'winner' })
      .expect(200);
    await waitFor(
      async () =>
        reference(await allSignals(), undefined, 'all').winners === (await getStats()).body.data.winners,
      5000,
      100,
      'catch up',
    );
    const settled = (await getStats()).body.data as Statistics;

    // Replay: the old signal.new (version 1, active) and the winner event again, straight onto the bus.
    const conn = await connect(infraUrls().amqpUrl);
    const ch = await conn.createConfirmChannel();
    const exchange = brokerNames(broker.prefix).signalEvents;
    const detail = (
      await request(signals.url).get(`/v1/signals/${id}`).set('Authorization', `Bearer ${signals.token()}`)
    ).body.data as SignalDetail;
    const stale = {
      id: 'evt_01J00000000000000000000000',
      name: 'signal.new',
      occurred_at: detail.created_at,
      signal: { ...detail, performance: { ...detail.performance, status: 'active' }, version: 1 },
    };
    const dup = {
      id: 'evt_01J00000000000000000000001',
      name: 'signal.winner',
      occurred_at: detail.updated_at,
      signal: { ...detail, version: 2 },
    };
    for (const e of [stale, dup, dup])
      ch.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), { messageId: e.id, persistent: true });
    await ch.waitForConfirms();
    await conn.close();
    await new Promise((r) => setTimeout(r, 1500));
    expect((await getStats()).body.data).toEqual(settled);
  });

  it('when the list and stats look at the same data, then they agree', async () => {
    const auth = { Authorization: `Bearer ${signals.token()}` };
    const list = await request(signals.url).get('/v1/signals?limit=1').set(auth).expect(200);
    const winners = await request(signals.url).get('/v1/signals?limit=1&status=winner').set(auth).expect(200);
    const s = (await getStats('?period=all')).body.data as Statistics;
    expect(s.total_signals).toBe(list.body.meta.total);
    expect(s.winners).toBe(winners.body.meta.total);
  });

  it.each([
    ['?period=1y', 'period'],
    ['?type=moon', 'type'],
    ['?window=7d', 'window'],
    ['?period=7d&period=24h', 'period'],
  ])('when the query is %s, then 400 naming %s', async (qs, field) => {
    const res = await getStats(qs).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(field);
  });

  it('when called directly without the gateway token, then 401', async () => {
    await request(stats.url).get('/v1/stats').expect(401);
  });
});
