import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key';

describe('API keys', () => {
  it('when a key is generated, then it is well formed, unique and sk_live_ prefixed', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const k of keys) {
      expect(k).toMatch(/^sk_live_[0-9A-Za-z]{49}$/);
      expect(isWellFormedApiKey(k)).toBe(true);
    }
  });

  it('when one character changes, then the checksum rejects it', () => {
    const key = generateApiKey();
    const i = 20;
    const typo = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    expect(isWellFormedApiKey(typo)).toBe(false);
    expect(isWellFormedApiKey('sk_live_short')).toBe(false);
    expect(isWellFormedApiKey(`sk_test_${key.slice(8)}`)).toBe(false);
  });

  it('when hashed with different peppers, then the hashes differ and never contain the key', () => {
    const key = generateApiKey();
    const a = hashApiKey(key, 'pepper-a');
    expect(a).not.toBe(hashApiKey(key, 'pepper-b'));
    expect(a).not.toContain(key.slice(8, 20));
    expect(displayPrefix(key)).toBe(key.slice(0, 14));
  });
});
