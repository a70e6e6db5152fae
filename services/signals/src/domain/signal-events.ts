import { SIGNAL_EVENT_VERSION, type BusEventName, type SignalEvent } from '@signal/contracts';
import { currentEventContext, newId } from '@signal/service-kit';
import type { StoredSignal } from './signal';
import { toSnapshot } from './signal.mapper';

export function signalEvent(name: BusEventName, doc: StoredSignal, at: Date): SignalEvent {
  return {
    schema_version: SIGNAL_EVENT_VERSION,
    id: newId('evt'),
    name,
    occurred_at: at.toISOString(),
    signal: toSnapshot(doc),
    // Captured now, while the write's request is current: the relay publishes later.
    context: currentEventContext(),
  };
}
