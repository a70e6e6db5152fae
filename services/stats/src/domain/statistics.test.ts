import { periodStart, toStatistics } from './statistics';

describe('toStatistics', () => {
  it('when there are no rows, then every figure is zero and every type is present', () => {
    const s = toStatistics([], undefined);
    expect(s).toMatchObject({ total_signals: 0, winners: 0, win_rate: 0, avg_roi: 0, best_roi: 0 });
    expect(Object.keys(s.by_type).sort()).toEqual(['30d', '3d', '7d', 'new', 'premium', 'wallet']);
    expect(s.by_type.wallet).toEqual({ total: 0, winners: 0, win_rate: 0 });
  });

  it('when rows are given, then totals add up and rates are percentages', () => {
    const s = toStatistics(
      [
        { _id: 'new', total: 3, winners: 1, roi_sum: 300 },
        { _id: '7d', total: 1, winners: 1, roi_sum: -50 },
      ],
      250,
    );
    expect(s).toMatchObject({ total_signals: 4, winners: 2, win_rate: 50, avg_roi: 62.5, best_roi: 250 });
    expect(s.by_type.new).toEqual({ total: 3, winners: 1, win_rate: 33.33 });
  });

  it("when a type filters the figures, then the totals are that type's and by_type keeps every type's real figures", () => {
    const s = toStatistics(
      [
        { _id: 'new', total: 3, winners: 1, roi_sum: 300 },
        { _id: '7d', total: 1, winners: 1, roi_sum: -50 },
      ],
      120,
      '7d',
    );
    expect(s).toMatchObject({ total_signals: 1, winners: 1, win_rate: 100, avg_roi: -50, best_roi: 120 });
    expect(s.by_type.new).toEqual({ total: 3, winners: 1, win_rate: 33.33 });
    expect(s.by_type['7d']).toEqual({ total: 1, winners: 1, win_rate: 100 });
    expect(s.by_type.wallet).toEqual({ total: 0, winners: 0, win_rate: 0 });
  });

  it('when the period is all, then there is no lower bound; 24h is a day back', () => {
    expect(periodStart('all')).toBeUndefined();
    expect(periodStart('24h', 86_400_000 * 2)!.getTime()).toBe(86_400_000);
  });
});
