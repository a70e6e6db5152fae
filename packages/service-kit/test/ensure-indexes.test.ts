import { testDatabase } from '@signal/test-kit';
import type { mongo } from 'mongoose';
import { connectMongo, ensureIndexes } from '../src';

describe('ensureIndexes', () => {
  it('when a service restarts on a database that has its indexes, then ensuring them again succeeds and changes nothing', async () => {
    const db = testDatabase('ensure_idx');
    const conn = await connectMongo(db.url, db.dbName);
    try {
      const indexes: mongo.IndexDescription[] = [
        { key: { created_at: -1, _id: -1 } },
        { key: { type: 1, 'performance.status': 1, created_at: -1 } },
        { key: { idem_key: 1 }, unique: true },
      ];
      await ensureIndexes(conn, 'things', indexes);
      // The restart: FerretDB 1.24 dropped the connection here when all came in one command.
      await ensureIndexes(conn, 'things', indexes);
      const names = (await conn.collection('things').indexes()).map((i) => i.name).sort();
      expect(names).toEqual(['_id_', 'created_at_-1__id_-1', 'idem_key_1', 'type_1_performance.status_1_created_at_-1']);
    } finally {
      await conn.dropDatabase().catch(() => undefined);
      await conn.close();
    }
  });
});
