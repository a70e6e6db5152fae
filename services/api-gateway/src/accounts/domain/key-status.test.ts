import { keyStatus } from './key-status';

describe('key status', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');

  it('when a key is neither revoked nor past its expiry, then it is active', () => {
    expect(keyStatus({ revoked_at: null, expires_at: null }, now)).toBe('active');
    expect(keyStatus({ revoked_at: null, expires_at: '2026-11-24T12:00:01Z' }, now)).toBe('active');
  });

  it('when its expiry is now or past, then it is expired, whether stored as a date or shown as a string', () => {
    expect(keyStatus({ revoked_at: null, expires_at: new Date(now) }, now)).toBe('expired');
    expect(keyStatus({ revoked_at: null, expires_at: '2026-11-23T00:00:00Z' }, now)).toBe('expired');
  });

  it('when it was revoked, then it is revoked even if it also expired', () => {
    expect(keyStatus({ revoked_at: new Date(now - 1), expires_at: new Date(now - 1) }, now)).toBe('revoked');
  });
});
