import { KeyCache, type KeyRecord } from './key-cache';

describe('key cache', () => {
  const record: KeyRecord = {
    keyId: 'key_1',
    accountId: 'acc_1',
    expiresAt: null,
    revoked: false,
    perMinute: 60,
    perDay: 10_000,
  };
  it('when a hash was found unknown, then it is remembered as unknown for a while, then looked up again', () => {
    const cache = new KeyCache({ unknownTtlMs: 1000 });
    cache.set('h', undefined, 0);
    expect(cache.get('h', 999).state).toBe('unknown');
    expect(cache.get('h', 1001).state).toBe('miss');
  });
  it('when a record ages, then it is served and refreshed in the background, and past its limit looked up first', () => {
    const cache = new KeyCache({ refreshAfterMs: 100, maxAgeMs: 200 });
    cache.set('h', record, 0);
    expect(cache.get('h', 50)).toEqual({ state: 'known', record, stale: false });
    expect(cache.get('h', 150)).toEqual({ state: 'known', record, stale: true });
    expect(cache.get('h', 250).state).toBe('miss');
  });
});
