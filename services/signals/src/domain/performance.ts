import type { UpdateSignalInput } from '@signal/contracts';
import type { SignalDocument } from './signal';

/** ROI in percent from market caps: 150 means +150 %. Rounded to 2 decimals for stable output. */
export function roiPercent(entry: number, value: number): number {
  if (entry <= 0) return 0;
  return Math.round((value / entry - 1) * 10_000) / 100;
}

type Market = Pick<SignalDocument, 'metrics' | 'performance'>;

/**
 * A new signal's market caps and returns: the current cap defaults to the entry cap, and the
 * all-time high is never below the current or the entry cap.
 */
export function openingMarket(metrics: { mcap_entry: number; mcap_current?: number; mcap_ath?: number }): {
  mcap_current: number;
  mcap_ath: number;
  roi: number;
  ath_roi: number;
} {
  const entry = metrics.mcap_entry;
  const current = metrics.mcap_current ?? entry;
  const ath = Math.max(metrics.mcap_ath ?? current, current, entry);
  return {
    mcap_current: current,
    mcap_ath: ath,
    roi: roiPercent(entry, current),
    ath_roi: roiPercent(entry, ath),
  };
}

/**
 * A market move: the patch's metrics over the current ones, the all-time high never below the
 * current cap, ROI and ATH ROI derived from the caps unless the patch gives them, and the time
 * to ATH set to the hours since entry when this move makes a new high.
 */
export function marketMove(
  current: Market & Pick<SignalDocument, 'created_at'>,
  patch: UpdateSignalInput,
  nowMs: number,
): Market {
  const metrics = { ...current.metrics, ...patch.metrics };
  metrics.mcap_ath = Math.max(metrics.mcap_ath, metrics.mcap_current);
  const reachedNewAth = metrics.mcap_ath > current.metrics.mcap_ath;
  const hoursSinceEntry =
    Math.round(((nowMs - new Date(current.created_at).getTime()) / 3_600_000) * 100) / 100;
  return {
    metrics,
    performance: {
      ...current.performance,
      roi: patch.performance?.roi ?? roiPercent(metrics.mcap_entry, metrics.mcap_current),
      ath_roi: patch.performance?.ath_roi ?? roiPercent(metrics.mcap_entry, metrics.mcap_ath),
      time_to_ath_hours:
        patch.performance?.time_to_ath_hours ??
        (reachedNewAth ? hoursSinceEntry : current.performance.time_to_ath_hours),
    },
  };
}
