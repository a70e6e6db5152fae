import type { SignalDetail, SignalListItem, SignalSnapshot } from '@signal/contracts';
import type { SignalDocument } from '../data/signal.model';

type StoredSignal = Omit<SignalDocument, 'outbox' | 'has_outbox' | 'idem_key' | 'idem_hash'>;

/** Only the spec's fields leave the service: no _id, version, outbox or idempotency data. */
export function toListItem(doc: StoredSignal): SignalListItem {
  return {
    id: doc._id,
    token: {
      symbol: doc.token.symbol,
      name: doc.token.name,
      contract: doc.token.contract,
      age_hours: doc.token.age_hours,
    },
    metrics: {
      mcap_entry: doc.metrics.mcap_entry,
      mcap_current: doc.metrics.mcap_current,
      volume_24h: doc.metrics.volume_24h,
      holders: doc.metrics.holders,
      liquidity: doc.metrics.liquidity,
    },
    performance: {
      roi: doc.performance.roi,
      ath_roi: doc.performance.ath_roi,
      status: doc.performance.status,
    },
    type: doc.type,
    is_premium: doc.is_premium,
    created_at: new Date(doc.created_at).toISOString(),
  };
}

export function toDetail(doc: StoredSignal): SignalDetail {
  const item = toListItem(doc);
  return {
    ...item,
    token: {
      ...item.token,
      dex_paid: doc.token.dex_paid,
      socials: {
        twitter: doc.token.socials?.twitter ?? null,
        telegram: doc.token.socials?.telegram ?? null,
        website: doc.token.socials?.website ?? null,
      },
    },
    metrics: { ...item.metrics, mcap_ath: doc.metrics.mcap_ath },
    performance: { ...item.performance, time_to_ath_hours: doc.performance.time_to_ath_hours },
    updated_at: new Date(doc.updated_at).toISOString(),
  };
}

export function toSnapshot(doc: StoredSignal): SignalSnapshot {
  return { ...toDetail(doc), version: doc.version };
}
