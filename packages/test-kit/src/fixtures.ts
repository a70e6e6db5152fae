import type { SignalSnapshot } from '@signal/contracts';

/** A minimal valid signal as the signals service puts it on the bus (tests and benches). */
export function signalSnapshotFixture(id: string, at: string = new Date().toISOString()): SignalSnapshot {
  return {
    id,
    token: {
      symbol: 'X',
      name: 'X',
      contract: 'So1anaXXXXXXXXpump',
      age_hours: 1,
      dex_paid: true,
      socials: { twitter: null, telegram: null, website: null },
    },
    metrics: { mcap_entry: 1, mcap_current: 1, volume_24h: 1, holders: 1, liquidity: 1, mcap_ath: 1 },
    performance: { roi: 0, ath_roi: 0, status: 'active', time_to_ath_hours: 0 },
    type: 'new',
    is_premium: false,
    created_at: at,
    updated_at: at,
    version: 1,
  };
}
