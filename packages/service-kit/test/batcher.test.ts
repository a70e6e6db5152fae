import { Batcher } from '../src/batcher';

/** A run that records its batches and doubles each number; it can be held open or made to fail. */
function recordingRun() {
  const batches: number[][] = [];
  let running = 0;
  let peak = 0;
  let failNext = false;
  const held: Array<() => void> = [];
  let holding = false;
  return {
    batches,
    peak: () => peak,
    failOnce: () => (failNext = true),
    hold: () => (holding = true),
    releaseAll: () => {
      holding = false;
      for (const release of held.splice(0)) release();
    },
    run: async (items: number[]): Promise<number[]> => {
      batches.push(items);
      running += 1;
      peak = Math.max(peak, running);
      try {
        if (holding) await new Promise<void>((r) => held.push(r));
        if (failNext) {
          failNext = false;
          throw new Error('store down');
        }
        return items.map((n) => n * 2);
      } finally {
        running -= 1;
      }
    },
  };
}

describe('Batcher', () => {
  it('when callers add within one window, then one run carries all of them and each gets its own results', async () => {
    const r = recordingRun();
    const batcher = new Batcher({ run: r.run, maxItems: 100, windowMs: 5, maxConcurrent: 1 });
    const [a, b] = await Promise.all([batcher.add([1, 2]), batcher.add([3])]);
    expect(r.batches).toEqual([[1, 2, 3]]);
    expect(a).toEqual([2, 4]);
    expect(b).toEqual([6]);
  });

  it('when more than maxItems wait, then they go in full batches without waiting for the window', async () => {
    const r = recordingRun();
    const batcher = new Batcher({ run: r.run, maxItems: 2, windowMs: 60_000, maxConcurrent: 4 });
    const results = await batcher.add([1, 2, 3, 4]);
    expect(r.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(results).toEqual([2, 4, 6, 8]);
  });

  it('when a run fails, then every caller of that batch gets the error and later batches still run', async () => {
    const r = recordingRun();
    const batcher = new Batcher({ run: r.run, maxItems: 10, windowMs: 1, maxConcurrent: 1 });
    r.failOnce();
    await expect(Promise.all([batcher.add([1]), batcher.add([2])])).rejects.toThrow('store down');
    await expect(batcher.add([3])).resolves.toEqual([6]);
  });

  it('when maxConcurrent is 1, then batches never overlap, and what waited goes once the slot frees', async () => {
    const r = recordingRun();
    const batcher = new Batcher({ run: r.run, maxItems: 1, windowMs: 1, maxConcurrent: 1 });
    r.hold();
    const all = batcher.add([1, 2, 3]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(r.batches).toEqual([[1]]);
    r.releaseAll();
    // Later batches are not held: hold() was switched off by releaseAll.
    await expect(all).resolves.toEqual([2, 4, 6]);
    expect(r.peak()).toBe(1);
  });

  it('when a batch is in flight, then a second starts only once minBatchWhileRunning items wait, and fewer go when it is done', async () => {
    const r = recordingRun();
    const batcher = new Batcher({
      run: r.run,
      maxItems: 100,
      windowMs: 1,
      maxConcurrent: 4,
      minBatchWhileRunning: 3,
    });
    r.hold();
    const first = batcher.add([1]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const few = batcher.add([2, 3]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Two items beside one batch in flight: they wait for it.
    expect(r.batches).toEqual([[1]]);
    const more = batcher.add([4]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Three: worth a batch of their own beside it.
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
    const last = batcher.add([5]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(r.batches).toHaveLength(2);
    r.releaseAll();
    await expect(Promise.all([first, few, more, last])).resolves.toEqual([[2], [4, 6], [8], [10]]);
    // Once nothing was in flight, the one item left went alone.
    expect(r.batches).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('when flushed, then everything queued runs before flush resolves', async () => {
    const r = recordingRun();
    const batcher = new Batcher({ run: r.run, maxItems: 100, windowMs: 60_000, maxConcurrent: 1 });
    const pending = batcher.add([5]);
    await batcher.flush();
    expect(r.batches).toEqual([[5]]);
    await expect(pending).resolves.toEqual([10]);
  });

  it('when a run returns the wrong number of results, then the callers get an error, not a wrong result', async () => {
    const batcher = new Batcher<number, number>({
      run: async () => [1],
      maxItems: 10,
      windowMs: 1,
      maxConcurrent: 1,
    });
    await expect(batcher.add([1, 2])).rejects.toThrow('batch of 2 returned 1 results');
  });
});
