import { chooseLane } from './lanes';

const holding = (byLane: Record<number, number>) => (lane: number) => byLane[lane] ?? 0;

describe('chooseLane', () => {
  it('when the own lane holds less than half its prefetch, then the own lane, whatever the second holds', () => {
    expect(chooseLane([3, 9], holding({ 3: 499, 9: 0 }), 1000)).toBe(3);
  });

  it('when the own lane holds half its prefetch or more and the second holds fewer, then the second', () => {
    expect(chooseLane([3, 9], holding({ 3: 500, 9: 499 }), 1000)).toBe(9);
    expect(chooseLane([3, 9], holding({ 3: 1000 }), 1000)).toBe(9);
  });

  it('when both lanes hold as much, then the own lane (an account keeps to one lane while it can)', () => {
    expect(chooseLane([3, 9], holding({ 3: 1000, 9: 1000 }), 1000)).toBe(3);
  });

  it('when there is one lane, then lane 0', () => {
    expect(chooseLane([0, 0], holding({ 0: 1000 }), 1000)).toBe(0);
  });
});
