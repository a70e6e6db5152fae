import { silentLogger } from '@signal/test-kit';
import { deliveryIdBound } from './delivery-state';
import { DeliveryRetention, type ExpiredRecords } from './retention';

const NOW = Date.parse('2026-06-01T00:00:00Z');
const RETENTION_MS = 86_400_000;

/** A store that records each sweep's bound and answers from `answers` in turn (then 0). */
function recordingStore(answers: Array<() => Promise<number>> = []) {
  const bounds: string[] = [];
  const signals: Array<AbortSignal | undefined> = [];
  const windowsEndedBefore: Date[] = [];
  const store: ExpiredRecords = {
    removeBefore(bound, signal) {
      bounds.push(bound);
      signals.push(signal);
      return (answers.shift() ?? (() => Promise.resolve(0)))();
    },
    removeEndedRecoverWindows(now) {
      windowsEndedBefore.push(now);
      return Promise.resolve(0);
    },
  };
  return { store, bounds, signals, windowsEndedBefore };
}

/** The sweeper at a fixed clock, every `intervalMs`. */
const sweeper = (store: ExpiredRecords, intervalMs: number) =>
  new DeliveryRetention({
    store,
    retentionMs: RETENTION_MS,
    intervalMs,
    logger: silentLogger,
    now: () => NOW,
  });

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 1));
}

describe('delivery retention', () => {
  it('when started, then every interval it removes what is older than the retention, by the bound of that time', async () => {
    const { store, bounds } = recordingStore();
    const retention = sweeper(store, 2);
    retention.start();
    await until(() => bounds.length >= 3);
    await retention.stop();
    expect(new Set(bounds)).toEqual(new Set([deliveryIdBound(NOW - RETENTION_MS)]));
    const after = bounds.length;
    await new Promise((r) => setTimeout(r, 20));
    expect(bounds.length).toBe(after);
  });

  it('when a sweep fails, then the next one still comes', async () => {
    const { store, bounds } = recordingStore([() => Promise.reject(new Error('store down'))]);
    const retention = sweeper(store, 2);
    retention.start();
    await until(() => bounds.length >= 2);
    await retention.stop();
    expect(bounds.length).toBeGreaterThanOrEqual(2);
  });

  it('when stopped during a sweep, then the sweep is told to stop and stop waits for it to end', async () => {
    let finish: (n: number) => void = () => undefined;
    const { store, signals, windowsEndedBefore } = recordingStore([
      () => new Promise<number>((resolve) => (finish = resolve)),
    ]);
    const retention = sweeper(store, 1);
    retention.start();
    await until(() => signals.length === 1);
    let stopped = false;
    const stopping = retention.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(signals[0]?.aborted).toBe(true);
    expect(stopped).toBe(false);
    finish(1000);
    await stopping;
    expect(stopped).toBe(true);
    expect(signals).toHaveLength(1);
    // A stopping sweep ends with the batch in hand: nothing else is started.
    expect(windowsEndedBefore).toHaveLength(0);
  });

  it('when asked for one sweep, then it answers how many deliveries went and removes the recover windows ended by then', async () => {
    const { store, windowsEndedBefore } = recordingStore([() => Promise.resolve(7)]);
    const retention = sweeper(store, 60_000);
    expect(await retention.sweep()).toBe(7);
    expect(windowsEndedBefore).toEqual([new Date(NOW)]);
  });
});
