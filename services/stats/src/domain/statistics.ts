import type { SignalType, Statistics, StatsPeriod } from '@signal/contracts';
import type { GroupRow } from './ports';

const PERIOD_MS: Record<Exclude<StatsPeriod, 'all'>, number> = {
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
};

/** Periods count signals created strictly after now minus the period; `all` has no bound. */
export function periodStart(period: StatsPeriod, now = Date.now()): Date | undefined {
  return period === 'all' ? undefined : new Date(now - PERIOD_MS[period]);
}

const round2 = (n: number) => Math.round(n * 100) / 100;
const rate = (winners: number, total: number) => (total === 0 ? 0 : round2((winners / total) * 100));

/**
 * Percent figures (docs/api.md): win_rate 0–100, avg/best ROI in percent. `rows` hold every
 * type of the period; `type` narrows the top-level figures only: `by_type` always gives every type
 * its real figures (0 for every other type would read as "no signals"). `bestRoi` is the best of
 * the figures' own population (the type's when filtered).
 */
export function toStatistics(rows: GroupRow[], bestRoi: number | undefined, type?: SignalType): Statistics {
  const none = () => ({ total: 0, winners: 0, win_rate: 0 });
  const byType: Statistics['by_type'] = {
    new: none(),
    '3d': none(),
    '7d': none(),
    '30d': none(),
    wallet: none(),
    premium: none(),
  };
  let total = 0;
  let winners = 0;
  let roiSum = 0;
  for (const row of rows) {
    if (!(row._id in byType)) continue;
    byType[row._id] = { total: row.total, winners: row.winners, win_rate: rate(row.winners, row.total) };
    if (type !== undefined && row._id !== type) continue;
    total += row.total;
    winners += row.winners;
    roiSum += row.roi_sum;
  }
  return {
    total_signals: total,
    winners,
    win_rate: rate(winners, total),
    avg_roi: total === 0 ? 0 : round2(roiSum / total),
    best_roi: total === 0 ? 0 : round2(bestRoi ?? 0),
    by_type: byType,
  };
}
