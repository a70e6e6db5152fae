import { STATUS_TRANSITIONS, type BusEventName, type SignalStatus } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';

/** A status moves only along STATUS_TRANSITIONS (dead and rugged are final); the move names its event. */
export function statusChange(
  from: SignalStatus,
  to: SignalStatus,
): Result<BusEventName, 'INVALID_STATUS_TRANSITION'> {
  if (!STATUS_TRANSITIONS[from].includes(to))
    return fail('INVALID_STATUS_TRANSITION', `A signal cannot go from ${from} to ${to}.`);
  return succeed(statusEventName(to));
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
