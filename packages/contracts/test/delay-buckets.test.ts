import { DELAY_BUCKETS_MS, nextDelayHop } from '../src';

/** Plays a wait through the buckets the way the queues do: each hop waits exactly its bucket. */
function play(waitMs: number): { hops: number[]; firedAt: number } {
  const hops: number[] = [];
  let now = 0;
  for (let hop = nextDelayHop(waitMs); hop > 0; hop = nextDelayHop(waitMs - now)) {
    hops.push(hop);
    now += hop;
  }
  return { hops, firedAt: now };
}

describe('delay buckets', () => {
  it.each([0, 15, 250, 999, 1000, 4123, 10_000, 119_999, 900_000, 3_600_000, 7_777_777])(
    'when an attempt must wait %i ms, then it fires never early and at most 250 ms late',
    (waitMs) => {
      const { firedAt } = play(waitMs);
      expect(firedAt).toBeGreaterThanOrEqual(waitMs - 20);
      expect(firedAt - waitMs).toBeLessThanOrEqual(250);
    },
  );

  it('when a wait is long, then it hops largest-first through few queues', () => {
    expect(play(3_600_000).hops).toEqual([3_600_000]);
    expect(play(3_900_000).hops).toEqual([3_600_000, 300_000]);
    expect(play(125_000).hops).toEqual([60_000, 60_000, 5000]);
    expect(play(7_777_777).hops.length).toBeLessThan(25);
  });

  it('when the buckets are listed, then they ascend (the hop choice relies on it)', () => {
    expect([...DELAY_BUCKETS_MS]).toEqual([...DELAY_BUCKETS_MS].sort((a, b) => a - b));
  });
});
