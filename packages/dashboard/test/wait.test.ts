import { messageWithWait, waitText } from '../src/api';

describe('what the dashboard says of a wait', () => {
  it('when a wait is given in seconds, then it reads in seconds, minutes or hours', () => {
    expect([0, 1, 45, 60, 128, 3599, 3600, 3900, 7260.2].map(waitText)).toEqual([
      '0 s',
      '1 s',
      '45 s',
      '1 min',
      '2 min 8 s',
      '59 min 59 s',
      '1 h',
      '1 h 5 min',
      '2 h 1 min',
    ]);
  });

  it('when a refusal names the retry_after field, then the wait takes its place; otherwise it is added', () => {
    expect(messageWithWait('Too many failed logins: wait retry_after seconds.', 128)).toBe(
      'Too many failed logins: wait 2 min 8 s.',
    );
    expect(
      messageWithWait('Rate limit exceeded. Retry after the number of seconds in retry_after.', 30),
    ).toBe('Rate limit exceeded. Retry after 30 s.');
    expect(messageWithWait('Recover may be called 10 times a minute per account.', 26)).toBe(
      'Recover may be called 10 times a minute per account. Try again in 26 s.',
    );
    expect(messageWithWait('Recover may be called 10 times a minute. Retry after 26 s.', 26)).toBe(
      'Recover may be called 10 times a minute. Retry after 26 s.',
    );
    expect(messageWithWait('Invalid email or password.', undefined)).toBe('Invalid email or password.');
  });
});
