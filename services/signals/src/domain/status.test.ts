import { SIGNAL_STATUSES } from '@signal/contracts';
import { statusChange } from './status';

describe('status transitions', () => {
  it.each([
    ['active', 'winner', 'signal.winner'],
    ['active', 'dead', 'signal.dead'],
    ['active', 'rugged', 'signal.rugged'],
    ['winner', 'dead', 'signal.dead'],
    ['winner', 'rugged', 'signal.rugged'],
  ] as const)(
    'when a signal goes from %s to %s, then the move is allowed and announces %s',
    (from, to, event) => {
      expect(statusChange(from, to)).toEqual({ ok: true, value: event });
    },
  );

  it.each(
    SIGNAL_STATUSES.flatMap(
      (to) =>
        [
          ['dead', to],
          ['rugged', to],
        ] as const,
    ),
  )('when a %s signal is moved to %s, then it is refused (dead and rugged are final)', (from, to) => {
    expect(statusChange(from, to)).toEqual({
      ok: false,
      code: 'INVALID_STATUS_TRANSITION',
      message: `A signal cannot go from ${from} to ${to}.`,
    });
  });

  it('when a signal would go back to active or stay where it is, then it is refused', () => {
    expect(statusChange('winner', 'active')).toMatchObject({ ok: false });
    expect(statusChange('active', 'active')).toMatchObject({ ok: false });
    expect(statusChange('winner', 'winner')).toMatchObject({ ok: false });
  });
});
