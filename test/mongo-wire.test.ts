import mongoose, { Schema } from 'mongoose';
import { testDatabase } from '@signal/test-kit';

/**
 * The MongoDB features the services rely on (indexes, filters, sort, paging, $group), proven
 * against the server the tests use: FerretDB by default (docs/decisions/embedded-mongodb-wire-default.md).
 */
describe('the MongoDB-wire server', () => {
  const db = testDatabase('wire');
  let conn: mongoose.Connection;
  const Item = new Schema(
    { _id: String, kind: String, n: Number, tags: [String], flag: Number },
    { versionKey: false },
  );
  Item.index({ kind: 1, n: -1 }, { unique: true });

  beforeAll(async () => {
    conn = await mongoose.createConnection(db.url, { dbName: db.dbName }).asPromise();
  });
  afterAll(async () => {
    await conn.dropDatabase();
    await conn.close();
  });

  it('when mongoose creates a compound unique index, inserts and queries, then filters, sort, skip, limit and $group/$sum work', async () => {
    const model = conn.model('Item', Item);
    await model.createCollection();
    await model.createIndexes();
    const indexes = await model.collection.indexes();
    expect(indexes.find((i) => i.name === 'kind_1_n_-1')).toMatchObject({ unique: true });

    await model.insertMany(
      Array.from({ length: 20 }, (_, i) => ({
        _id: `i${String(i).padStart(2, '0')}`,
        kind: i % 2 ? 'odd' : 'even',
        n: i,
        tags: [`t${i % 3}`],
        flag: i % 5 === 0 ? 1 : 0,
      })),
    );
    await expect(model.create({ _id: 'dup', kind: 'odd', n: 1 })).rejects.toMatchObject({ code: 11000 });

    const page = await model
      .find({ kind: 'odd', n: { $gte: 5 } })
      .sort({ n: -1 })
      .skip(1)
      .limit(3)
      .lean();
    expect(page.map((d) => d.n)).toEqual([17, 15, 13]);
    expect(await model.countDocuments({ tags: 't1', n: { $in: [1, 4, 7, 10] } })).toBe(4);

    const grouped = await model.aggregate<{ _id: string; total: number }>([
      { $match: { n: { $lt: 10 } } },
      { $group: { _id: '$kind', total: { $sum: '$n' } } },
      { $sort: { _id: 1 } },
    ]);
    expect(grouped).toEqual([
      { _id: 'even', total: 0 + 2 + 4 + 6 + 8 },
      { _id: 'odd', total: 1 + 3 + 5 + 7 + 9 },
    ]);
  });
});
