import type { BusEventName, SignalEvent, SignalStatus } from '@signal/contracts';
import { newId } from '@signal/service-kit';
import type { SignalDocument } from '../data/signal.model';
import { toSnapshot } from './signal.mapper';

export function signalEvent(
  name: BusEventName,
  doc: Omit<SignalDocument, 'outbox' | 'has_outbox'>,
  at: Date,
): SignalEvent {
  return { id: newId('evt'), name, occurred_at: at.toISOString(), signal: toSnapshot(doc) };
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
