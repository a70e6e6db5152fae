import type { BusEventName, SignalDetail, SignalStatus, UpdateSignalInput } from '@signal/contracts';
import { fail, KeyedMutex, succeed, type Result } from '@signal/service-kit';
import { marketMove } from './performance';
import type { SignalWriteStore, WriteEffects } from './ports';
import type { StoredSignal } from './signal';
import { signalEvent } from './signal-events';
import { toDetail, toSnapshot } from './signal.mapper';
import { statusChange } from './status';

const MAX_CAS_RETRIES = 8;

/** What a change makes of the current signal, or why it refuses it. */
type Change = (
  current: StoredSignal,
) => Result<{ next: StoredSignal; event: BusEventName }, 'INVALID_STATUS_TRANSITION'>;

type ChangeResult = Result<SignalDetail, 'NOT_FOUND' | 'CONFLICT' | 'INVALID_STATUS_TRANSITION'>;

/**
 * One change of a signal at a time in this process: each reads the signal after the one before
 * it wrote, so concurrent changes of one signal do not spend their compare-and-set retries on
 * each other and end in 409 CONFLICT. Writers in other processes still meet at the
 * compare-and-set.
 */
const changesInProcess = new KeyedMutex();

/** Read → change → compare-and-set with its event; on a concurrent write, read again. */
function applyChange(
  repository: SignalWriteStore,
  effects: WriteEffects,
  id: string,
  change: Change,
): Promise<ChangeResult> {
  return changesInProcess.run(id, () => readChangeWrite(repository, effects, id, change));
}

async function readChangeWrite(
  repository: SignalWriteStore,
  effects: WriteEffects,
  id: string,
  change: Change,
): Promise<ChangeResult> {
  for (let i = 0; i < MAX_CAS_RETRIES; i++) {
    const current = await repository.findById(id);
    if (!current) return fail('NOT_FOUND', `Signal ${id} was not found.`);
    const now = new Date();
    const changed = change(current);
    if (!changed.ok) return changed;
    const { next, event } = changed.value;
    const stored = { ...next, updated_at: now, version: current.version + 1 };
    const written = await repository.replaceState(
      id,
      current.version,
      { metrics: stored.metrics, performance: stored.performance, updated_at: now },
      signalEvent(event, stored, now),
    );
    if (written) {
      await effects.written([toSnapshot(stored)]);
      return succeed(toDetail(stored));
    }
  }
  return fail('CONFLICT', 'The signal is being changed concurrently; retry.');
}

/** Market moves: metrics and performance, with ROI derived from market caps unless given. */
export function updateSignal(
  repository: SignalWriteStore,
  effects: WriteEffects,
  id: string,
  patch: UpdateSignalInput,
): Promise<ChangeResult> {
  return applyChange(repository, effects, id, (current) =>
    succeed({ next: { ...current, ...marketMove(current, patch, Date.now()) }, event: 'signal.updated' }),
  );
}

/** Status moves only along STATUS_TRANSITIONS; anything else is a 409. */
export function changeSignalStatus(
  repository: SignalWriteStore,
  effects: WriteEffects,
  id: string,
  status: SignalStatus,
): Promise<ChangeResult> {
  return applyChange(repository, effects, id, (current) => {
    const event = statusChange(current.performance.status, status);
    if (!event.ok) return event;
    return succeed({
      next: { ...current, performance: { ...current.performance, status } },
      event: event.value,
    });
  });
}
