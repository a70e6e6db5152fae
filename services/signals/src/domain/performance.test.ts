import { marketMove, openingMarket, roiPercent } from './performance';

const HOUR = 3_600_000;
const created = new Date(Date.UTC(2026, 0, 1));

function signal(metrics: { mcap_entry: number; mcap_current: number; mcap_ath: number }, timeToAth = 0) {
  return {
    created_at: created,
    metrics: { ...metrics, volume_24h: 10, holders: 5, liquidity: 7 },
    performance: { roi: 0, ath_roi: 0, status: 'active' as const, time_to_ath_hours: timeToAth },
  };
}

describe('ROI', () => {
  it('when the cap rises from 100k to 250k, then the ROI is +150 %, rounded to 2 decimals', () => {
    expect(roiPercent(100_000, 250_000)).toBe(150);
    expect(roiPercent(3, 4)).toBe(33.33);
    expect(roiPercent(100, 40)).toBe(-60);
  });

  it('when the entry cap is zero, then the ROI is 0 (never infinite or NaN)', () => {
    expect(roiPercent(0, 500)).toBe(0);
  });
});

describe('opening market', () => {
  it('when only the entry cap is given, then current and ATH equal it and both returns are 0', () => {
    expect(openingMarket({ mcap_entry: 100 })).toEqual({
      mcap_current: 100,
      mcap_ath: 100,
      roi: 0,
      ath_roi: 0,
    });
  });

  it('when a given ATH is below the current or entry cap, then the ATH is raised to the highest of them', () => {
    expect(openingMarket({ mcap_entry: 100, mcap_current: 300, mcap_ath: 200 })).toMatchObject({
      mcap_ath: 300,
      ath_roi: 200,
    });
    expect(openingMarket({ mcap_entry: 100, mcap_current: 50, mcap_ath: 20 })).toMatchObject({
      mcap_ath: 100,
      roi: -50,
      ath_roi: 0,
    });
  });
});

describe('market move', () => {
  it('when the cap makes a new high, then the ATH follows it and the time to ATH is the hours since entry', () => {
    const moved = marketMove(
      signal({ mcap_entry: 100, mcap_current: 150, mcap_ath: 150 }),
      {
        metrics: { mcap_current: 400 },
      },
      created.getTime() + 5.5 * HOUR,
    );
    expect(moved.metrics).toMatchObject({ mcap_current: 400, mcap_ath: 400, volume_24h: 10 });
    expect(moved.performance).toMatchObject({ roi: 300, ath_roi: 300, time_to_ath_hours: 5.5 });
  });

  it('when the cap falls, then the ATH and the time to ATH stay and only the ROI falls', () => {
    const moved = marketMove(
      signal({ mcap_entry: 100, mcap_current: 400, mcap_ath: 400 }, 5.5),
      {
        metrics: { mcap_current: 120 },
      },
      created.getTime() + 30 * HOUR,
    );
    expect(moved.metrics.mcap_ath).toBe(400);
    expect(moved.performance).toMatchObject({ roi: 20, ath_roi: 300, time_to_ath_hours: 5.5 });
  });

  it('when the patch gives returns or a time to ATH, then they win over the derived ones', () => {
    const moved = marketMove(
      signal({ mcap_entry: 100, mcap_current: 100, mcap_ath: 100 }),
      {
        metrics: { mcap_current: 200 },
        performance: { roi: 7, ath_roi: 8, time_to_ath_hours: 9 },
      },
      created.getTime() + HOUR,
    );
    expect(moved.performance).toMatchObject({ roi: 7, ath_roi: 8, time_to_ath_hours: 9 });
  });

  it('when a patch lowers the ATH below the current cap, then the ATH is the current cap', () => {
    const moved = marketMove(
      signal({ mcap_entry: 100, mcap_current: 300, mcap_ath: 300 }),
      {
        metrics: { mcap_ath: 50 },
      },
      created.getTime() + HOUR,
    );
    expect(moved.metrics.mcap_ath).toBe(300);
  });
});
