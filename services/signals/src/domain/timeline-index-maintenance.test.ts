import type { SignalSnapshot } from '@signal/contracts';
import { signalSnapshotFixture, silentLogger } from '@signal/test-kit';
import type { SignalSource, TimelineRepairLog, TimelineWriter } from './ports';
import type { StoredSignal } from './signal';
import { TimelineIndexMaintenance } from './timeline-index-maintenance';

/** An index that refuses the next `failures` applies, then accepts everything (newest version wins). */
class FlakyIndex implements TimelineWriter {
  readonly held = new Map<string, number>();
  constructor(public failures: number) {}
  async apply(snapshots: SignalSnapshot[]): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('Command timed out');
    }
    for (const s of snapshots) if ((this.held.get(s.id) ?? 0) < s.version) this.held.set(s.id, s.version);
  }
  readonly model = {
    isReady: async () => true,
    rebuild: async () => true,
    observeLag: () => undefined,
  };
}

class MemoryRepairs implements TimelineRepairLog {
  readonly rows = new Set<string>();
  failDone = 0;
  async record(ids: string[]): Promise<void> {
    for (const id of ids) this.rows.add(id);
  }
  async next(limit: number): Promise<string[]> {
    return [...this.rows].slice(0, limit);
  }
  async done(ids: string[]): Promise<void> {
    if (this.failDone > 0) {
      this.failDone -= 1;
      throw new Error('store unavailable');
    }
    for (const id of ids) this.rows.delete(id);
  }
}

/** The store: counts reads by id (on a FerretDB without a usable `_id` index each one is a scan). */
function countingSource(): SignalSource & { reads: number } {
  const source = {
    reads: 0,
    async findById(): Promise<StoredSignal | null> {
      source.reads += 1;
      return null;
    },
    async *streamAll(): AsyncGenerator<StoredSignal[]> {},
    async exportPage(): Promise<StoredSignal[]> {
      return [];
    },
  };
  return source;
}

const snapshot = (id: string, version: number): SignalSnapshot => ({ ...signalSnapshotFixture(id), version });

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(done()).toBe(true);
}

describe('TimelineIndexMaintenance repairs', () => {
  it('when an index update fails, then the repair re-applies the held snapshots without reading the store', async () => {
    const index = new FlakyIndex(1);
    const repairs = new MemoryRepairs();
    const source = countingSource();
    const maintenance = new TimelineIndexMaintenance({
      index,
      repository: source,
      repairs,
      logger: silentLogger,
      intervalMs: 10,
    });
    await maintenance.record([snapshot('sig_a', 1), snapshot('sig_b', 3)]);
    expect(repairs.rows.size).toBe(2);
    maintenance.start();
    await until(() => repairs.rows.size === 0);
    await maintenance.stop();
    expect(index.held).toEqual(
      new Map([
        ['sig_a', 1],
        ['sig_b', 3],
      ]),
    );
    expect(source.reads).toBe(0);
  });

  it('when removing the repair rows fails, then the next pass still has the snapshots and reads nothing', async () => {
    const index = new FlakyIndex(1);
    const repairs = new MemoryRepairs();
    repairs.failDone = 2;
    const source = countingSource();
    const maintenance = new TimelineIndexMaintenance({
      index,
      repository: source,
      repairs,
      logger: silentLogger,
      intervalMs: 10,
    });
    await maintenance.record([snapshot('sig_c', 2)]);
    maintenance.start();
    await until(() => repairs.rows.size === 0);
    await maintenance.stop();
    expect(index.held.get('sig_c')).toBe(2);
    expect(source.reads).toBe(0);
  });

  it('when a signal failed again with a newer version, then the newer one is what the repair applies', async () => {
    const index = new FlakyIndex(2);
    const repairs = new MemoryRepairs();
    const source = countingSource();
    const maintenance = new TimelineIndexMaintenance({
      index,
      repository: source,
      repairs,
      logger: silentLogger,
      intervalMs: 10,
    });
    await maintenance.record([snapshot('sig_d', 1)]);
    await maintenance.record([snapshot('sig_d', 2)]);
    await maintenance.record([snapshot('sig_d', 1)]); // an older one arriving late changes nothing held
    maintenance.start();
    await until(() => repairs.rows.size === 0);
    await maintenance.stop();
    expect(index.held.get('sig_d')).toBe(2);
    expect(source.reads).toBe(0);
  });
});
