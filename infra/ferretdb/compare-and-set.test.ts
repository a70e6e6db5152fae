import { connectMongo } from '@signal/service-kit';
import { isFerretDB, testDatabase } from '@signal/test-kit';
import type { Connection } from 'mongoose';

/**
 * Why infra/ferretdb/doclocks.go exists: FerretDB 1.24 applies an update between a read and a
 * write it does not lock, so concurrent compare-and-set writes of one document on different
 * connections lost updates (each "succeeded", the document kept one of them). Every service's
 * replicas rely on compare-and-set holding across processes: the outbox, signal changes,
 * deliveries. Two clients here are two processes' connection pools.
 */
const db = testDatabase('compare_and_set');
let a: Connection;
let b: Connection;

interface Doc {
  _id: string;
  version: number;
  items: string[];
}

beforeAll(async () => {
  a = await connectMongo(db.url, db.dbName);
  b = await connectMongo(db.url, db.dbName);
});
afterAll(async () => {
  await a.dropDatabase();
  await a.close();
  await b.close();
});

async function casWriter(conn: Connection, id: string, tag: string, count: number): Promise<number> {
  const docs = conn.collection<Doc>('docs');
  let succeeded = 0;
  for (let i = 0; i < count; i++) {
    for (;;) {
      const doc = await docs.findOne({ _id: id });
      if (!doc) throw new Error('the document is gone');
      const r = await docs.updateOne(
        { _id: id, version: doc.version },
        { $set: { version: doc.version + 1 }, $push: { items: `${tag}${i}` } },
      );
      if (r.matchedCount === 1) {
        succeeded += 1;
        break;
      }
    }
  }
  return succeeded;
}

describe('compare-and-set across connections', () => {
  it('when four writers on two clients compare-and-set one document at once, then every success is in the document', async () => {
    const docs = a.collection<Doc>('docs');
    await docs.insertOne({ _id: 'one', version: 0, items: [] });
    const successes = await Promise.all([
      casWriter(a, 'one', 'a', 60),
      casWriter(b, 'one', 'b', 60),
      casWriter(a, 'one', 'c', 60),
      casWriter(b, 'one', 'd', 60),
    ]);
    const total = successes.reduce((x, y) => x + y, 0);
    const doc = await docs.findOne({ _id: 'one' });
    expect(total).toBe(240);
    expect(doc?.version).toBe(total);
    expect(new Set(doc?.items).size).toBe(total);
  });

  it('when writers on two clients update different documents, then each document has all of its own', async () => {
    const docs = a.collection<Doc>('docs');
    await docs.insertMany([
      { _id: 'p', version: 0, items: [] },
      { _id: 'q', version: 0, items: [] },
    ]);
    await Promise.all([casWriter(a, 'p', 'a', 40), casWriter(b, 'p', 'b', 40), casWriter(b, 'q', 'c', 40)]);
    expect((await docs.findOne({ _id: 'p' }))?.version).toBe(80);
    expect((await docs.findOne({ _id: 'q' }))?.version).toBe(40);
    // The same holds on MongoDB, where it is the server's own guarantee.
    expect(typeof (await isFerretDB(a))).toBe('boolean');
  });
});
