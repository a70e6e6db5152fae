import { idTimeMs, newId } from '../src/ids';

const ULID_BODY = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('newId', () => {
  test('when many ids are made in one millisecond, then they are distinct and sort in the order they were made', () => {
    const ids = Array.from({ length: 5000 }, () => newId('sig'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id.slice(4)).toMatch(ULID_BODY);
  });

  test('when a time is given, then the id carries that time and its random part uses every character', () => {
    const time = Date.UTC(2024, 0, 1, 12, 0, 0, 123);
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const id = newId('evt', time);
      expect(idTimeMs(id)).toBe(time);
      for (const ch of id.slice(14)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    // 32,000 random characters over 32 symbols: about 1,000 each; a broken draw skews far past this.
    expect(counts.size).toBe(32);
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(200);
  });
});
