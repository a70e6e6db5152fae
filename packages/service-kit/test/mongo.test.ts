import { infraUrls, uniqueName } from '@signal/test-kit';
import mongoose from 'mongoose';
import { ensureIndexes } from '../src';

describe('ensureIndexes', () => {
  it('when a service starts twice on one database, then the second start finds its indexes and goes on', async () => {
    const conn = await mongoose
      .createConnection(infraUrls().mongoUrl, { dbName: uniqueName('t_idx') })
      .asPromise();
    try {
      const indexes = [
        { key: { hash: 1 }, name: 'hash_1', unique: true },
        { key: { account_id: 1, created_at: -1 }, name: 'account_id_1_created_at_-1' },
      ] as const;
      await ensureIndexes(conn, 'keys', indexes);
      await ensureIndexes(conn, 'keys', indexes);
      const names = (await conn.collection('keys').indexes()).map((i) => i.name).sort();
      expect(names).toEqual(['_id_', 'account_id_1_created_at_-1', 'hash_1']);
    } finally {
      await conn.dropDatabase();
      await conn.close();
    }
  });
});
