import { InsertBatcher, type InsertBatcherOptions } from './insert-batcher';

interface Doc {
  _id: string;
}

/** A store double for the batching rule only (the real store is exercised by the service tests). */
function recordingStore(existing: string[] = []) {
  const writes: string[][] = [];
  const stored = new Set(existing);
  let failNext = false;
  const refusing = new Set<string>();
  return {
    writes,
    /** The store refuses any write holding this document (as jsonb refuses a NUL in a string). */
    refuse: (id: string) => refusing.add(id),
    failOnce: () => {
      failNext = true;
    },
    write: async (docs: Doc[]) => {
      writes.push(docs.map((d) => d._id));
      if (failNext) {
        failNext = false;
        throw new Error('store down');
      }
      const bad = docs.find((d) => refusing.has(d._id));
      if (bad) throw new Error(`unsupported Unicode escape sequence in ${bad._id}`);
      const duplicates = new Set(docs.flatMap((d, index) => (stored.has(d._id) ? [index] : [])));
      for (const d of docs) stored.add(d._id);
      return duplicates;
    },
  };
}

const docs = (...ids: string[]) => ids.map((_id) => ({ _id }));
const batcher = (
  store: ReturnType<typeof recordingStore>,
  maxItems: number,
  windowMs: number,
  maxConcurrentWrites: number,
  hooks: Pick<InsertBatcherOptions<Doc>, 'held' | 'refused' | 'transient'> = {},
) =>
  new InsertBatcher<Doc>({
    write: store.write,
    id: (d) => d._id,
    maxItems,
    windowMs,
    maxConcurrentWrites,
    ...hooks,
  });

describe('batched inserts', () => {
  it('when callers insert within one window, then one write carries all of them', async () => {
    const store = recordingStore();
    const b = batcher(store, 100, 5, 2);
    await Promise.all([b.insert(docs('a', 'b')), b.insert(docs('c')), b.insert(docs('d'))]);
    expect(store.writes).toEqual([['a', 'b', 'c', 'd']]);
  });

  it('when more than a batch waits, then writes are cut at the batch size without waiting for the window', async () => {
    jest.useFakeTimers();
    try {
      const store = recordingStore();
      const b = batcher(store, 2, 1000, 4);
      let settled = false;
      const inserted = b.insert(docs('a', 'b', 'c', 'd')).then(() => (settled = true));
      // No timer time passes: full batches are written at once, not at the window's end.
      await jest.advanceTimersByTimeAsync(0);
      expect(settled).toBe(true);
      await inserted;
      expect(store.writes).toEqual([
        ['a', 'b'],
        ['c', 'd'],
      ]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('when some documents were stored before, then the caller learns which, the others are written, and the count is reported', async () => {
    const store = recordingStore(['b', 'c']);
    const held: number[] = [];
    const b = batcher(store, 10, 1, 1, { held: (count) => held.push(count) });
    expect([...(await b.insert(docs('a', 'b', 'c', 'd')))].sort()).toEqual(['b', 'c']);
    await b.insert(docs('e'));
    expect(held).toEqual([2]);
  });

  it('when a write fails for another reason, then its callers are rejected and later writes go on', async () => {
    const store = recordingStore();
    const b = batcher(store, 10, 1, 1);
    store.failOnce();
    await expect(b.insert(docs('a'))).rejects.toThrow('store down');
    await expect(b.insert(docs('b'))).resolves.toEqual(new Set());
  });

  it('when flushed, then everything queued is written before it resolves', async () => {
    const store = recordingStore();
    const b = batcher(store, 10, 60_000, 1);
    const pending = b.insert(docs('a'));
    await b.flush();
    expect(store.writes).toEqual([['a']]);
    await pending;
  });

  it('when the store refuses one document of a batch, then the others land, only its caller is rejected, and it is reported', async () => {
    const store = recordingStore();
    const refused: string[] = [];
    const b = batcher(store, 100, 5, 1, { refused: (d) => refused.push(d._id) });
    store.refuse('bad');
    const [a, bad, c] = await Promise.allSettled([
      b.insert(docs('a1', 'a2')),
      b.insert(docs('bad')),
      b.insert(docs('c')),
    ]);
    expect(a).toEqual({ status: 'fulfilled', value: new Set() });
    expect(bad.status).toBe('rejected');
    expect(c).toEqual({ status: 'fulfilled', value: new Set() });
    expect(refused).toEqual(['bad']);
    // The batch, then each document alone; every good one is stored.
    expect(store.writes[0]).toEqual(['a1', 'a2', 'bad', 'c']);
    expect(store.writes.slice(1)).toEqual([['a1'], ['a2'], ['bad'], ['c']]);
  });

  it('when the store is unreachable, then the whole batch is rejected without writing each document alone', async () => {
    const store = recordingStore();
    const b = batcher(store, 100, 5, 1, { transient: () => true });
    store.failOnce();
    const results = await Promise.allSettled([b.insert(docs('a')), b.insert(docs('b'))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(store.writes).toEqual([['a', 'b']]);
  });
});
