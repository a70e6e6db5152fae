import { removeInBatches, restAsLongAsTook } from './paced-batches';

/** A clock that moves `stepMs` each time it is read. */
function steppingClock(stepMs: number) {
  let t = 0;
  return () => (t += stepMs);
}

describe('removal in paced batches', () => {
  it('when batches come back full, then it rests after each as long as it took, and stops at the first short one', async () => {
    const answers = [5, 5, 2, 5];
    const rests: number[] = [];
    const removed = await removeInBatches(
      () => Promise.resolve(answers.shift() ?? 0),
      5,
      undefined,
      (tookMs) => {
        rests.push(tookMs);
        return Promise.resolve();
      },
      steppingClock(7),
    );
    expect(removed).toBe(12);
    expect(rests).toEqual([7, 7]);
    expect(answers).toEqual([5]);
  });

  it('when the signal is aborted during a rest, then no further batch is asked for', async () => {
    const abort = new AbortController();
    let batches = 0;
    const removed = await removeInBatches(
      () => {
        batches++;
        return Promise.resolve(5);
      },
      5,
      abort.signal,
      () => {
        abort.abort();
        return Promise.resolve();
      },
    );
    expect({ removed, batches }).toEqual({ removed: 5, batches: 1 });
  });

  it('when the signal is aborted, then the rest ends without an error', async () => {
    const abort = new AbortController();
    abort.abort();
    await expect(restAsLongAsTook(60_000, abort.signal)).resolves.toBeUndefined();
  });
});
