import {
  STATUS_TRANSITIONS,
  type BusEventName,
  type SignalDetail,
  type SignalStatus,
  type UpdateSignalInput,
} from '@signal/contracts';
import { AppError } from '@signal/service-kit';
import type { StoredSignal, SignalRepository } from '../data/signal.repository';
import { roiPercent } from './performance';
import { signalEvent, statusEventName } from './signal-events';
import type { WriteEffects } from './ports';
import { toDetail, toSnapshot } from './signal.mapper';

const MAX_CAS_RETRIES = 8;

type Change = (current: StoredSignal) => { next: StoredSignal; event: BusEventName };

/** Read → change → compare-and-set with its event; on a concurrent write, read again. */
async function applyChange(
  repository: SignalRepository,
  effects: WriteEffects,
  id: string,
  change: Change,
): Promise<SignalDetail> {
  for (let i = 0; i < MAX_CAS_RETRIES; i++) {
    const current = await repository.findById(id);
    if (!current) throw new AppError('NOT_FOUND', `Signal ${id} was not found.`);
    const now = new Date();
    const { next, event } = change(current);
    const stored = { ...next, updated_at: now, version: current.version + 1 };
    const written = await repository.replaceState(
      id,
      current.version,
      { metrics: stored.metrics, performance: stored.performance, updated_at: now },
      signalEvent(event, stored, now),
    );
    if (written) {
      await effects.written([toSnapshot(stored)]);
      return toDetail(stored);
    }
  }
  throw new AppError('CONFLICT', 'The signal is being changed concurrently; retry.');
}

/** Market moves: metrics and performance, with ROI derived from market caps unless given. */
export function updateSignal(
  repository: SignalRepository,
  effects: WriteEffects,
  id: string,
  patch: UpdateSignalInput,
): Promise<SignalDetail> {
  return applyChange(repository, effects, id, (current) => {
    const metrics = { ...current.metrics, ...patch.metrics };
    metrics.mcap_ath = Math.max(metrics.mcap_ath, metrics.mcap_current);
    const reachedNewAth = metrics.mcap_ath > current.metrics.mcap_ath;
    const hoursSinceEntry =
      Math.round(((Date.now() - new Date(current.created_at).getTime()) / 3_600_000) * 100) / 100;
    const performance = {
      ...current.performance,
      roi: patch.performance?.roi ?? roiPercent(metrics.mcap_entry, metrics.mcap_current),
      ath_roi: patch.performance?.ath_roi ?? roiPercent(metrics.mcap_entry, metrics.mcap_ath),
      time_to_ath_hours:
        patch.performance?.time_to_ath_hours ??
        (reachedNewAth ? hoursSinceEntry : current.performance.time_to_ath_hours),
    };
    return { next: { ...current, metrics, performance }, event: 'signal.updated' };
  });
}

/** Status moves only along STATUS_TRANSITIONS; anything else is a 409. */
export function changeSignalStatus(
  repository: SignalRepository,
  effects: WriteEffects,
  id: string,
  status: SignalStatus,
): Promise<SignalDetail> {
  return applyChange(repository, effects, id, (current) => {
    const from = current.performance.status;
    if (!STATUS_TRANSITIONS[from].includes(status)) {
      throw new AppError('INVALID_STATUS_TRANSITION', `A signal cannot go from ${from} to ${status}.`);
    }
    return {
      next: { ...current, performance: { ...current.performance, status } },
      event: statusEventName(status),
    };
  });
}
