import { lanesOf } from '../src/topology';

describe('lanesOf', () => {
  it('when asked twice for one account, then it gives the same two different lanes, within the lanes', () => {
    for (const id of ['acc_1', 'acc_01JD3Z', 'ä-account', '']) {
      const [own, second] = lanesOf(id, 16);
      expect(lanesOf(id, 16)).toEqual([own, second]);
      expect(second).not.toBe(own);
      for (const lane of [own, second]) {
        expect(lane).toBeGreaterThanOrEqual(0);
        expect(lane).toBeLessThan(16);
      }
    }
  });

  it('when given many account ids, then every lane is some account’s own and every pair of lanes occurs', () => {
    const own = new Map<number, number>();
    const pairs = new Set<string>();
    for (let i = 0; i < 16_000; i++) {
      const [a, b] = lanesOf(`acc_${i.toString(36)}`, 16);
      own.set(a, (own.get(a) ?? 0) + 1);
      pairs.add(`${a}-${b}`);
    }
    expect(own.size).toBe(16);
    expect(Math.max(...own.values())).toBeLessThan(2000);
    // 16 own lanes × 15 second lanes.
    expect(pairs.size).toBe(240);
  });

  it('when there is one lane, then every account has lane 0 twice', () => {
    expect(new Set(['a', 'b', 'acc_x'].flatMap((id) => lanesOf(id, 1)))).toEqual(new Set([0]));
  });

  it('when computed, then its own lane is FNV-1a of the id (a published hash, so any release agrees)', () => {
    // FNV-1a 32 of "a" is 0xe40c292c; of "foobar" 0xbf9cf968 (the reference test vectors).
    expect(lanesOf('a', 2 ** 32 - 1)[0]).toBe(0xe40c292c % (2 ** 32 - 1));
    expect(lanesOf('foobar', 2 ** 32 - 1)[0]).toBe(0xbf9cf968 % (2 ** 32 - 1));
  });
});
