import { SIGNAL_TYPES, type SignalType, type StatsPeriod } from '@signal/contracts';
import { redisClient, type RedisClient } from '@signal/service-kit';
import { infraUrls, silentLogger, uniqueName } from '@signal/test-kit';
import type { ProjectedSignal } from '../src/domain/projection';
import { StatsAggregates } from '../src/data/stats-aggregates';
import { periodStart, toStatistics } from '../src/domain/statistics';

/**
 * The incremental aggregates against a reference computed from the final states, at a fixed
 * "now", with signals placed right at each period's edge, on hour and day boundaries, ROIs
 * that fall (the best must follow), and stale or repeated versions replayed.
 */
let redis: RedisClient;
let aggregates: StatsAggregates;

beforeAll(async () => {
  // The figures' arithmetic is under test, not the services' fail-fast client: no 1 s command
  // timeout, which a shared Redis on a loaded machine can pass.
  redis = redisClient(infraUrls().redisUrl, { maxRetriesPerRequest: null });
  await redis.ping();
  aggregates = new StatsAggregates(redis, `${uniqueName('agg')}:`, 'test', silentLogger);
  await redis.set(`${aggregates.prefix}ready`, aggregates.model.epoch);
});
afterAll(async () => {
  await aggregates.model.clear();
  redis.disconnect();
});

const NOW = Date.UTC(2026, 10, 22, 13, 37, 12, 345);
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const PERIODS: StatsPeriod[] = ['24h', '7d', '30d', 'all'];

let seed = 7;
const random = () => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};

function reference(states: Map<string, ProjectedSignal>, type: SignalType | undefined, period: StatsPeriod) {
  const since = periodStart(period, NOW);
  const rows = [...states.values()].filter(
    (s) => (!type || s.type === type) && (!since || s.created_at.getTime() > since.getTime()),
  );
  const byType = SIGNAL_TYPES.flatMap((t) => {
    const of = rows.filter((s) => s.type === t);
    return of.length
      ? [
          {
            _id: t,
            total: of.length,
            winners: of.filter((s) => s.is_winner === 1).length,
            // Exact (in 1/10,000 %): a float sum can land on the other side of a rounding.
            roi_sum: of.reduce((a, s) => a + Math.round(s.roi * 10_000), 0) / 10_000,
          },
        ]
      : [];
  });
  return toStatistics(byType, rows.length ? Math.max(...rows.map((s) => s.roi)) : undefined);
}

async function expectEveryPeriodMatches(states: Map<string, ProjectedSignal>) {
  for (const type of [undefined, ...SIGNAL_TYPES]) {
    for (const period of PERIODS) {
      const figures = await aggregates.figures(type, periodStart(period, NOW), NOW);
      expect({ type, period, stats: toStatistics(figures!.rows, figures!.bestRoi) }).toEqual({
        type,
        period,
        stats: reference(states, type, period),
      });
    }
  }
}

describe('incremental stats aggregates', () => {
  it('when signals sit at period edges and hour/day boundaries, move, fall and arrive stale, then every (type, period) equals the reference', async () => {
    const edges = [DAY, 7 * DAY, 30 * DAY].flatMap((p) => [NOW - p - 1, NOW - p, NOW - p + 1, NOW - p + 2]);
    const boundaries = [0, 1, 2, 6, 7, 29, 30, 31].flatMap((d) => {
      const day = Math.floor((NOW - d * DAY) / DAY) * DAY;
      return [day, day - 1, day + HOUR, day + HOUR - 1];
    });
    // The edge minute is read signal by signal, the rest of its hour from minute counters.
    const minuteEdges = [DAY, 7 * DAY, 30 * DAY].flatMap((p) => {
      const next = Math.ceil((NOW - p) / MINUTE) * MINUTE;
      const hourEnd = Math.ceil((NOW - p) / HOUR) * HOUR;
      return [next - 1, next, next + MINUTE - 1, next + MINUTE, hourEnd - 1, hourEnd];
    });
    // Better ROIs than any other, just before each cutoff in its hour: the edge hour's ROI
    // ranking is read from the top and must skip them (more than its first chunk of 10 per type).
    const beforeCutoff = new Set(
      [DAY, 7 * DAY, 30 * DAY].flatMap((p) => [
        Math.floor((NOW - p) / HOUR) * HOUR,
        ...Array.from({ length: 90 }, (_, k) => NOW - p - 2 - k * 1_000),
      ]),
    );
    const times = [
      ...edges,
      ...minuteEdges,
      ...beforeCutoff,
      ...boundaries,
      NOW,
      NOW + 30_000, // created_at may sit a little in the future
      ...Array.from({ length: 300 }, () => NOW - Math.floor(random() * 45 * DAY)),
    ];
    const states = new Map<string, ProjectedSignal>();
    const history: ProjectedSignal[] = [];
    let n = 0;
    for (const t of times) {
      n += 1;
      const s: ProjectedSignal = {
        _id: `sig_${String(n).padStart(26, '0')}`,
        type: SIGNAL_TYPES[n % SIGNAL_TYPES.length]!,
        status: 'active',
        is_winner: 0,
        roi: beforeCutoff.has(t) ? 1_000 + n : Math.round((random() * 300 - 80) * 100) / 100,
        created_at: new Date(t),
        version: 1,
      };
      states.set(s._id, s);
      history.push(s);
    }
    await aggregates.apply([...states.values()]);
    await expectEveryPeriodMatches(states);

    // Moves: ROI changes (the current best falls hard), winners come and go.
    const sortedByRoi = [...states.values()].sort((a, b) => b.roi - a.roi);
    const moves: ProjectedSignal[] = [];
    for (const s of [...sortedByRoi.slice(0, 5), ...[...states.values()].filter(() => random() < 0.4)]) {
      const current = states.get(s._id)!;
      const winner = random() < 0.5;
      const next: ProjectedSignal = {
        ...current,
        version: current.version + 1,
        roi:
          sortedByRoi.indexOf(s) >= 0 && sortedByRoi.indexOf(s) < 5
            ? -50
            : Math.round(random() * 500 * 100) / 100,
        status: winner ? 'winner' : 'dead',
        is_winner: winner ? 1 : 0,
      };
      states.set(s._id, next);
      moves.push(next);
      history.push(next);
    }
    // Delivered out of order and twice; older versions interleaved.
    const shuffled = [...moves, ...moves].sort(() => random() - 0.5);
    await aggregates.apply(shuffled);
    await aggregates.apply(history.filter((h) => h.version === 1).slice(0, 100));
    await expectEveryPeriodMatches(states);

    // An event that moves a signal's type or created_at (the domain never does) moves its whole
    // contribution instead of corrupting two sets of counters.
    const moved = [...states.values()].slice(0, 20).map((s, i) => ({
      ...s,
      version: s.version + 1,
      type: SIGNAL_TYPES[(SIGNAL_TYPES.indexOf(s.type) + 1) % SIGNAL_TYPES.length]!,
      created_at: i % 2 ? new Date(s.created_at.getTime() - 3 * DAY) : s.created_at,
    }));
    for (const m of moved) states.set(m._id, m);
    await aggregates.apply(moved);
    await expectEveryPeriodMatches(states);

    // The best ROI of all, inside the last day, then moved away: the rankings it leaves (and the
    // tops kept beside them) must forget it.
    const inside = [...states.values()].find(
      (s) => s.created_at.getTime() > NOW - 20 * HOUR && s.created_at.getTime() < NOW - 2 * HOUR,
    )!;
    const best = { ...inside, version: inside.version + 1, roi: 5_000 };
    await aggregates.apply([best]);
    states.set(best._id, best);
    await expectEveryPeriodMatches(states);
    const away = {
      ...best,
      version: best.version + 1,
      type: SIGNAL_TYPES[(SIGNAL_TYPES.indexOf(best.type) + 1) % SIGNAL_TYPES.length]!,
      created_at: new Date(best.created_at.getTime() - 3 * DAY),
    };
    await aggregates.apply([away]);
    states.set(away._id, away);
    await expectEveryPeriodMatches(states);
  });

  it('when several writers apply versions of the same signals at once, then each signal counts once with its newest state', async () => {
    const prefix = `${uniqueName('agg_race')}:`;
    const writers = [0, 1, 2, 3].map(() => new StatsAggregates(redis, prefix, 'test', silentLogger));
    await redis.set(`${writers[0]!.prefix}ready`, writers[0]!.model.epoch);
    const finals = new Map<string, ProjectedSignal>();
    const versions: ProjectedSignal[] = [];
    for (let i = 0; i < 60; i++) {
      for (let version = 1; version <= 4; version++) {
        const s: ProjectedSignal = {
          _id: `sig_race${String(i).padStart(22, '0')}`,
          type: SIGNAL_TYPES[i % SIGNAL_TYPES.length]!,
          status: version % 2 ? 'active' : 'winner',
          is_winner: version % 2 ? 0 : 1,
          roi: Math.round((random() * 400 - 90) * 100) / 100,
          created_at: new Date(NOW - (i % 3) * DAY - i * 60_000),
          version,
        };
        versions.push(s);
        finals.set(s._id, s);
      }
    }
    try {
      // Every version four times over, in random order, by random writers, sixteen applies in
      // flight at once: concurrent enough to interleave the writers, few enough that no command
      // waits behind hundreds of others past the client's command timeout on a loaded machine.
      const applies = writers.flatMap(() => [...versions].sort(() => random() - 0.5));
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let s = applies.pop(); s; s = applies.pop())
            await writers[Math.floor(random() * 4)]!.apply([s]);
        }),
      );
      for (const period of PERIODS) {
        const figures = await writers[0]!.figures(undefined, periodStart(period, NOW), NOW);
        expect(toStatistics(figures!.rows, figures!.bestRoi)).toEqual(reference(finals, undefined, period));
      }
    } finally {
      await writers[0]!.model.clear();
    }
  });

  it('when the model is not marked ready, or was built in an earlier key layout, then figures are undefined and callers fall back', async () => {
    const other = new StatsAggregates(redis, `${uniqueName('agg_unready')}:`, 'test', silentLogger);
    expect(await other.figures(undefined, undefined, NOW)).toBeUndefined();
    // The hour-edge layout marked its aggregates ready with the bare source epoch.
    await redis.set(`${other.prefix}ready`, 'test');
    expect(await other.figures(undefined, undefined, NOW)).toBeUndefined();
    expect(await other.figures(undefined, periodStart('24h', NOW), NOW)).toBeUndefined();
    await other.model.clear();
  });
});
