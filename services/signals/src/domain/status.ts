import { STATUS_TRANSITIONS, type BusEventName, type SignalStatus } from '@signal/contracts';

export type StatusChange =
  { ok: true; event: BusEventName } | { ok: false; code: 'INVALID_STATUS_TRANSITION'; message: string };

/** A status moves only along STATUS_TRANSITIONS (dead and rugged are final); the move names its event. */
export function statusChange(from: SignalStatus, to: SignalStatus): StatusChange {
  if (!STATUS_TRANSITIONS[from].includes(to))
    return {
      ok: false,
      code: 'INVALID_STATUS_TRANSITION',
      message: `A signal cannot go from ${from} to ${to}.`,
    };
  return { ok: true, event: statusEventName(to) };
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
