import { SIGNAL_EVENT_VERSION, type BusEventName, type SignalEvent, type SignalStatus } from '@signal/contracts';
import { currentEventContext, newId } from '@signal/service-kit';
import type { SignalDocument } from '../data/signal.model';
import { toSnapshot } from './signal.mapper';

export function signalEvent(
  name: BusEventName,
  doc: Omit<SignalDocument, 'outbox' | 'has_outbox'>,
  at: Date,
): SignalEvent {
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

/** The bus event a move into `status` announces. */
export function statusEventName(status: SignalStatus): BusEventName {
  switch (status) {
    case 'winner':
      return 'signal.winner';
    case 'dead':
      return 'signal.dead';
    case 'rugged':
      return 'signal.rugged';
    case 'active':
      return 'signal.updated';
  }
}
