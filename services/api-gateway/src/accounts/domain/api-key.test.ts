import { createHmac } from 'node:crypto';
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

  it('when hashed, then the value is HMAC-SHA256(pepper, key) in base64url for every pepper and key length', () => {
    const hmac = (key: string, pepper: string) =>
      createHmac('sha256', pepper).update(key).digest('base64url');
    // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
    expect(Buffer.from(hashApiKey('what do ya want for nothing?', 'Jefe'), 'base64url').toString('hex')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
    const peppers = ['p', 'x'.repeat(64), 'y'.repeat(65), 'é'.repeat(40), 'z'.repeat(200)];
    const keys = [generateApiKey(), '', 'ü'.repeat(10), 'k'.repeat(256), 'k'.repeat(257), 'ü'.repeat(200)];
    for (const pepper of peppers)
      for (const key of keys) expect(hashApiKey(key, pepper)).toBe(hmac(key, pepper));
    // Alternating peppers (the pads are prepared per pepper) and a short key after a long one.
    expect(hashApiKey('short', 'p')).toBe(hmac('short', 'p'));
    expect(hashApiKey('short', 'q')).toBe(hmac('short', 'q'));
  });
});
