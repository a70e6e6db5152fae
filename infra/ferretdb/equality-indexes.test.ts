import { connectMongo } from '@signal/service-kit';
import { isFerretDB, testDatabase } from '@signal/test-kit';
import type { Connection } from 'mongoose';

/**
 * Why infra/ferretdb/equalityindexes.go exists: FerretDB pushes an equality down to PostgreSQL
 * as `_jsonb->'f' @> value`, which its own btree indexes cannot serve. Through the embedded
 * wrapper, lookups by `_id` and by a single-field index are index scans (the GIN twin); a field
 * without an index is still a scan. On MongoDB the same lookups are checked to use an index.
 */
const db = testDatabase('equality_indexes');
let mongo: Connection;
let ferret: boolean;

interface Doc {
  _id: string;
  owner: string;
  unindexed: string;
  n: number;
}

beforeAll(async () => {
  mongo = await connectMongo(db.url, db.dbName);
  ferret = await isFerretDB(mongo);
  const docs = mongo.collection<Doc>('docs');
  await docs.createIndex({ owner: 1 });
  for (let from = 0; from < 20_000; from += 2_000) {
    await docs.insertMany(
      Array.from({ length: 2_000 }, (_, i) => ({
        _id: `doc_${String(from + i).padStart(6, '0')}`,
        owner: `owner_${(from + i) % 5_000}`,
        unindexed: `u_${from + i}`,
        n: from + i,
      })),
    );
  }
}, 180_000);
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

/**
 * The scans in the plan the server reports for a find: PostgreSQL's plan nodes under FerretDB
 * (`Node Type`, `Index Name`), the query planner's stages under MongoDB (`stage`, `indexName`).
 */
async function scans(filter: Partial<Doc>): Promise<string[]> {
  const explained: unknown = await mongo.collection<Doc>('docs').find(filter).explain();
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const fields = new Map(Object.entries(node));
      const kind = fields.get('Node Type') ?? fields.get('stage');
      const index = fields.get('Index Name') ?? fields.get('indexName');
      if (typeof kind === 'string') found.push(typeof index === 'string' ? `${kind} ${index}` : kind);
      fields.forEach(walk);
    }
  };
  walk(explained);
  return found;
}

describe('equality lookups on the embedded FerretDB', () => {
  it('when a document is looked up by _id, then the server serves it from an index', async () => {
    const found = await mongo.collection<Doc>('docs').findOne({ _id: 'doc_012345' });
    expect(found?.n).toBe(12_345);
    const plan = await scans({ _id: 'doc_012345' });
    if (ferret) expect(plan).toContainEqual(expect.stringMatching(/^Bitmap Index Scan \S+__id__\w+_gin$/));
    else expect(plan).toContainEqual(expect.stringMatching(/IDHACK|IXSCAN/));
  });

  it('when documents are looked up by a field with a single-field index, then the server serves them from an index', async () => {
    const found = await mongo.collection<Doc>('docs').find({ owner: 'owner_42' }).toArray();
    expect(found.map((d) => d.n).sort((a, b) => a - b)).toEqual([42, 5_042, 10_042, 15_042]);
    const plan = await scans({ owner: 'owner_42' });
    if (ferret) expect(plan).toContainEqual(expect.stringMatching(/^Bitmap Index Scan \S+_owner_\w+_gin$/));
    else expect(plan).toContainEqual(expect.stringMatching(/IXSCAN/));
  });

  it('when documents are looked up by a field without an index, then the server scans (no twin is made without an index)', async () => {
    const found = await mongo.collection<Doc>('docs').findOne({ unindexed: 'u_777' });
    expect(found?.n).toBe(777);
    const plan = await scans({ unindexed: 'u_777' });
    expect(plan).toEqual([ferret ? 'Seq Scan' : 'COLLSCAN']);
  });
});
