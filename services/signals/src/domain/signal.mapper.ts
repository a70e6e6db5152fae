import type { SignalDetail, SignalListItem, SignalSnapshot } from '@signal/contracts';
import type { StoredSignal } from './signal';

/** What the mappers read: a stored signal, idempotency data optional. */
type MappedSignal = Omit<StoredSignal, 'idem_key' | 'idem_hash'>;

/** The list item is the detail without the detail-only fields. */
export function detailToListItem(d: SignalDetail): SignalListItem {
  return {
    id: d.id,
    token: {
      symbol: d.token.symbol,
      name: d.token.name,
      contract: d.token.contract,
      age_hours: d.token.age_hours,
    },
    metrics: {
      mcap_entry: d.metrics.mcap_entry,
      mcap_current: d.metrics.mcap_current,
      volume_24h: d.metrics.volume_24h,
      holders: d.metrics.holders,
      liquidity: d.metrics.liquidity,
    },
    performance: { roi: d.performance.roi, ath_roi: d.performance.ath_roi, status: d.performance.status },
    type: d.type,
    is_premium: d.is_premium,
    created_at: d.created_at,
  };
}

/**
 * Only the public schema's fields (`SignalDetail`, `SignalListItem` in contracts) leave the
 * service: no _id, version, outbox or idempotency data.
 */
export const toListItem = (doc: MappedSignal): SignalListItem => detailToListItem(toDetail(doc));

export function toDetail(doc: MappedSignal): SignalDetail {
  return {
    id: doc._id,
    token: {
      symbol: doc.token.symbol,
      name: doc.token.name,
      contract: doc.token.contract,
      age_hours: doc.token.age_hours,
      dex_paid: doc.token.dex_paid,
      socials: {
        twitter: doc.token.socials?.twitter ?? null,
        telegram: doc.token.socials?.telegram ?? null,
        website: doc.token.socials?.website ?? null,
      },
    },
    metrics: {
      mcap_entry: doc.metrics.mcap_entry,
      mcap_current: doc.metrics.mcap_current,
      volume_24h: doc.metrics.volume_24h,
      holders: doc.metrics.holders,
      liquidity: doc.metrics.liquidity,
      mcap_ath: doc.metrics.mcap_ath,
    },
    performance: {
      roi: doc.performance.roi,
      ath_roi: doc.performance.ath_roi,
      status: doc.performance.status,
      time_to_ath_hours: doc.performance.time_to_ath_hours,
    },
    type: doc.type,
    is_premium: doc.is_premium,
    created_at: new Date(doc.created_at).toISOString(),
    updated_at: new Date(doc.updated_at).toISOString(),
  };
}

export function toSnapshot(doc: MappedSignal): SignalSnapshot {
  return { ...toDetail(doc), version: doc.version };
}
