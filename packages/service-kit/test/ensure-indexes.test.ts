import { testDatabase } from '@signal/test-kit';
import type { mongo } from 'mongoose';
import { connectMongo, ensureIndexes } from '../src';

describe('ensureIndexes against the MongoDB-wire server', () => {
  const db = testDatabase('ensure_indexes');
  const indexes: mongo.IndexDescription[] = [
    { key: { created_at: -1, _id: -1 } },
    { key: { type: 1, created_at: -1, _id: -1 } },
    { key: { type: 1, 'performance.status': 1, created_at: -1, _id: -1 } },
    { key: { idem_key: 1 }, unique: true },
  ];
  afterAll(() => db.drop());

  it('when a service starts again on its own database (documents and indexes there), then ensuring the indexes succeeds and leaves them as they were', async () => {
    const first = await connectMongo(db.url, db.dbName);
    await ensureIndexes(first, 'signals', indexes);
    await first.collection('signals').insertOne({ created_at: new Date(), type: 'new', idem_key: 'k' });
    await first.close();

    // A restart: a new connection ensures the same indexes again (a multi-index createIndexes
    // with existing indexes made FerretDB 1.24 panic and drop the connection here).
    const again = await connectMongo(db.url, db.dbName);
    try {
      await ensureIndexes(again, 'signals', indexes);
      const names = (await again.collection('signals').listIndexes().toArray()).map((i) => i.name).sort();
      expect(names).toEqual([
        '_id_',
        'created_at_-1__id_-1',
        'idem_key_1',
        'type_1_created_at_-1__id_-1',
        'type_1_performance.status_1_created_at_-1__id_-1',
      ]);
    } finally {
      await again.close();
    }
  });
});
