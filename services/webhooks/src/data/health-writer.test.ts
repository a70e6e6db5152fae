import { silentLogger } from '@signal/test-kit';
import type { HealthBatch } from '../domain/health';
import type { AttemptRecord } from '../domain/records';
import { HealthWriter } from './health-writer';

const attempt = (status: number): AttemptRecord => ({
  attempt: 1,
  started_at: new Date(),
  duration_ms: 5,
  status_code: status,
  error: status < 300 ? null : `http_${status}`,
});

/** The writing rule only: what would be written, and when (the store's update is the service tests'). */
function recordingWriter(flushMs: number, refreshMs: number) {
  const writes: Array<{ at: number; webhookId: string; status: number | null; failures: number }> = [];
  const writer = new HealthWriter(
    async (webhookId: string, batch: HealthBatch) => {
      writes.push({
        at: Date.now(),
        webhookId,
        status: batch.last.status_code,
        failures: batch.failures.length,
      });
    },
    flushMs,
    refreshMs,
    silentLogger,
  );
  return { writer, writes };
}

describe('subscription health writes', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('when attempts keep one outcome, then they are written once per refresh, none lost; when the outcome changes, then at the next flush', async () => {
    const { writer, writes } = recordingWriter(1_000, 10_000);
    for (let s = 0; s < 25; s++) {
      writer.note('wh_a', attempt(500));
      await jest.advanceTimersByTimeAsync(1_000);
    }
    // The first at once (nothing written before), then one a refresh, with every failure since.
    expect(writes.map((w) => w.at)).toEqual([1_000, 11_000, 21_000]);
    expect(writes.map((w) => w.failures)).toEqual([1, 10, 10]);

    writer.note('wh_a', attempt(200));
    await jest.advanceTimersByTimeAsync(1_000);
    expect(writes.at(-1)).toMatchObject({ at: 26_000, status: 200, failures: 4 });
  });

  it('when the writer is flushed, then what it holds is written whether due or not', async () => {
    const { writer, writes } = recordingWriter(1_000, 10_000);
    writer.note('wh_b', attempt(500));
    await jest.advanceTimersByTimeAsync(1_000);
    writer.note('wh_b', attempt(500));
    writer.note('wh_c', attempt(200));
    await writer.flush();
    expect(writes.map((w) => [w.webhookId, w.failures])).toEqual([
      ['wh_b', 1],
      ['wh_b', 1],
      ['wh_c', 0],
    ]);
    // Nothing is left to write later.
    await jest.advanceTimersByTimeAsync(30_000);
    expect(writes).toHaveLength(3);
  });
});
