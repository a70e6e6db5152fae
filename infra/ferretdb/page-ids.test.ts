import { connectMongo, storeIdCommands, type StoreIdCommands } from '@signal/service-kit';
import { holdStoreTables, isFerretDB, testDatabase } from '@signal/test-kit';
import type { Connection } from 'mongoose';

/**
 * The wrapper's own commands, as a client of the store sees them: `pageIds` (infra/ferretdb/pages.go),
 * a page of ids and a count by SQL over the collection's index, `pageIdsByLatest`, the same page
 * filtered by each document's latest record, `removeIdRange` (infra/ferretdb/idranges.go) and
 * `idsByPrefix` (infra/ferretdb/idprefixes.go), answered by the gate itself.
 * Whether its pages are the sorted find's is checked where the webhooks API uses it
 * (services/webhooks/test/store-reads.test.ts); here, what it does with what it cannot answer.
 */
const db = testDatabase('page_ids');
let mongo: Connection;
let pageIds: StoreIdCommands | undefined;
let ferret: boolean;

beforeAll(async () => {
  mongo = await connectMongo(db.url, db.dbName);
  ferret = await isFerretDB(mongo);
  pageIds = await storeIdCommands(mongo);
  const docs = mongo.collection<{ _id: string; owner: string; at: Date; n: number }>('docs');
  await docs.createIndex({ owner: 1, at: -1 });
  await docs.insertMany(
    Array.from({ length: 30 }, (_, i) => ({
      _id: `doc_${String(i).padStart(2, '0')}`,
      owner: i % 3 ? 'a' : 'b',
      at: new Date(1_700_000_000_000 + i),
      n: i,
    })),
  );
});
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

const command = (body: Record<string, unknown>) => {
  const target = mongo.db;
  if (!target) throw new Error('not connected');
  return target.command({
    pageIds: 'docs',
    equal: { owner: 'a' },
    sort: { at: -1, _id: -1 },
    limit: 5,
    ...body,
  });
};

describe('the embedded store’s pageIds command', () => {
  it('when the store is the embedded FerretDB, then it answers pageIds; MongoDB does not', () => {
    expect(pageIds !== undefined).toBe(ferret);
  });

  it('when a page is asked by equality, sort, skip and keyset, then the ids and the count are the matching documents’', async () => {
    if (!pageIds) return;
    expect(
      await pageIds.page('docs', { equal: { owner: 'a' }, sort: { at: -1, _id: -1 }, skip: 2, limit: 3 }),
    ).toEqual({
      ids: ['doc_26', 'doc_25', 'doc_23'],
      total: 20,
    });
    expect(
      await pageIds.page('docs', {
        equal: { owner: 'b', n: 9 },
        sort: { at: 1, _id: 1 },
        limit: 5,
      }),
    ).toEqual({ ids: ['doc_09'], total: 1 });
    expect(
      await pageIds.page('docs', {
        equal: { owner: 'a' },
        sort: { at: 1, _id: 1 },
        after: { at: new Date(1_700_000_000_000 + 4), _id: 'doc_04' },
        limit: 2,
      }),
    ).toEqual({ ids: ['doc_05', 'doc_07'], total: 20 });
  });

  it('when a range of ids is removed, then exactly its documents go, a batch a call, and the rest reads and writes as before', async () => {
    if (!pageIds) return;
    const kept = mongo.collection<{ _id: string | number; n: number }>('ranges');
    await kept.insertMany([
      ...[...'abcdefgh'].map((letter, n) => ({ _id: `id_${letter}`, n })),
      { _id: 'id', n: 8 },
      { _id: 'other_a', n: 9 },
      { _id: 7, n: 10 },
    ]);
    const range = { from: 'id_b', below: 'id_f' };
    expect(await pageIds.removeIdRange('ranges', range, 3)).toBe(3);
    expect(await pageIds.removeIdRange('ranges', range, 3)).toBe(1);
    expect(await pageIds.removeIdRange('ranges', range, 3)).toBe(0);
    const left = (await kept.find({}).toArray()).map((d) => String(d._id)).sort();
    expect(left).toEqual(['7', 'id', 'id_a', 'id_f', 'id_g', 'id_h', 'other_a']);
    expect(await kept.findOne({ _id: 'id_f' })).toMatchObject({ n: 5 });
    await kept.insertOne({ _id: 'id_c', n: 2 });
    expect(await kept.countDocuments({ _id: 'id_c' })).toBe(1);
    expect(await pageIds.removeIdRange('no_such_collection', range, 5)).toBe(0);
  });

  it('when a page is asked by each document’s latest record, then it holds those whose last record (or, with none, whose own field) says so', async () => {
    const byLatest = pageIds?.pageByLatest;
    expect(byLatest !== undefined).toBe(ferret);
    if (!byLatest) return;
    const records = mongo.collection<{ _id: string; of: string; n: number; s: string }>('records');
    await records.createIndex({ of: 1 });
    // doc_01: last record (n 10 after n 9: by number) says yes; doc_02: its last says no;
    // doc_04 and doc_07: none, so their own `s`; doc_06 another owner's.
    await records.insertMany([
      { _id: 'r1', of: 'doc_01', n: 9, s: 'no' },
      { _id: 'r2', of: 'doc_01', n: 10, s: 'yes' },
      { _id: 'r3', of: 'doc_02', n: 1, s: 'yes' },
      { _id: 'r4', of: 'doc_02', n: 2, s: 'no' },
      { _id: 'r5', of: 'doc_06', n: 1, s: 'yes' },
    ]);
    const docs = mongo.collection<{ _id: string; s?: string }>('docs');
    await docs.updateOne({ _id: 'doc_04' }, { $set: { s: 'yes' } });
    await docs.updateOne({ _id: 'doc_07' }, { $set: { s: 'no' } });
    const latest = { from: 'records', link: 'of', order: 'n', field: 's', equals: 'yes', fallback: 's' };
    expect(await byLatest('docs', { equal: { owner: 'a' }, sort: { _id: 1 }, limit: 10, latest })).toEqual({
      ids: ['doc_01', 'doc_04'],
      total: 2,
      examined: 20,
    });
    expect(
      await byLatest('docs', { equal: { owner: 'a' }, sort: { _id: 1 }, skip: 1, limit: 10, latest }),
    ).toEqual({ ids: ['doc_04'], total: 2, examined: 20 });
    // With no such record collection, each document's own field decides.
    expect(
      await byLatest('docs', { equal: {}, sort: { _id: 1 }, limit: 10, latest: { ...latest, from: 'none' } }),
    ).toEqual({ ids: ['doc_04'], total: 1, examined: 30 });
    await records.drop();
    await docs.updateMany({}, { $unset: { s: '' } });
  });

  it('when ids are asked by prefix, then those that begin with a prefix and the separator come, grouped by prefix, and records linked so are a document’s latest', async () => {
    const byPrefix = pageIds?.idsByPrefix;
    expect(byPrefix !== undefined).toBe(ferret);
    if (!byPrefix || !pageIds?.pageByLatest) return;
    const records = mongo.collection<{ _id: string; n: number; s: string }>('linked');
    // `doc_01x:1` sorts above `doc_01;` and `doc_010:1` below `doc_01:`: neither is doc_01's.
    await records.insertMany([
      { _id: 'doc_01:1', n: 1, s: 'no' },
      { _id: 'doc_01:2', n: 2, s: 'yes' },
      { _id: 'doc_01x:1', n: 1, s: 'no' },
      { _id: 'doc_010:1', n: 1, s: 'no' },
      { _id: 'doc_02:1', n: 1, s: 'no' },
    ]);
    expect(await byPrefix('linked', ['doc_02', 'doc_01', 'doc_03'], ':')).toEqual([
      'doc_02:1',
      'doc_01:1',
      'doc_01:2',
    ]);
    expect(await byPrefix('linked', [], ':')).toEqual([]);
    expect(await byPrefix('no_such_collection', ['doc_01'], ':')).toEqual([]);
    const latest = {
      from: 'linked',
      link: 'unused',
      separator: ':',
      order: 'n',
      field: 's',
      equals: 'yes',
      fallback: 's',
    };
    expect(
      await pageIds.pageByLatest('docs', { equal: { owner: 'a' }, sort: { _id: 1 }, limit: 10, latest }),
    ).toEqual({ ids: ['doc_01'], total: 1, examined: 20 });
    await records.drop();
  });

  it('when the collection or the database does not exist, then the page is empty', async () => {
    if (!pageIds) return;
    expect(await pageIds.page('no_such_collection', { equal: {}, sort: { _id: 1 }, limit: 5 })).toEqual({
      ids: [],
      total: 0,
    });
    const other = mongo.useDb(`${db.dbName}_none`);
    const target = other.db;
    if (!target) throw new Error('not connected');
    expect(await target.command({ pageIds: 'docs', equal: {}, sort: { _id: 1 }, limit: 5 })).toMatchObject({
      ids: [],
      total: 0,
    });
  });

  it('when the command is malformed, then it is refused as BadValue, and the connection serves the next command', async () => {
    if (!pageIds) return;
    const refused = [
      { limit: 0 },
      { limit: 1001 },
      { skip: -1 },
      { sort: { at: -1, _id: 1 } },
      { sort: {} },
      { equal: { 'a.b': 'x' } },
      { equal: { owner: { $gt: 'a' } } },
      { equal: { "owner'; DROP TABLE x; --": 'a' } },
      { after: { at: new Date() } },
      { equal: { owner: Number.NaN } },
      { maxTimeMS: -1 },
      { maxTimeMS: 'soon' },
    ];
    for (const body of refused)
      await expect(command(body)).rejects.toMatchObject({ code: 2, codeName: 'BadValue' });
    const target = mongo.db;
    if (!target) throw new Error('not connected');
    const removal = { removeIdRange: 'docs', from: 'doc_00', below: 'doc_99', limit: 5 };
    for (const body of [
      { from: '' },
      { from: 3 },
      { below: 'doc_00' },
      { below: 'a' },
      { limit: 0 },
      { limit: 10001 },
    ])
      await expect(target.command({ ...removal, ...body })).rejects.toMatchObject({
        code: 2,
        codeName: 'BadValue',
      });
    const latest = { from: 'records', link: 'of', order: 'n', field: 's', equals: 'x', fallback: 's' };
    const byLatest = { pageIdsByLatest: 'docs', equal: {}, sort: { _id: 1 }, limit: 5 };
    for (const body of [
      {},
      { latest: 'x' },
      { latest: { ...latest, from: '' } },
      { latest: { ...latest, link: "of'; DROP TABLE x; --" } },
      { latest: { ...latest, order: 'a.b' } },
      { latest: { ...latest, equals: { $gt: 'a' } } },
      { latest: { from: 'records', link: 'of', order: 'n', field: 's', fallback: 's' } },
      { latest: { ...latest, separator: '::' } },
      { latest: { ...latest, separator: '~' } },
      { latest: { ...latest, separator: 1 } },
    ])
      await expect(target.command({ ...byLatest, ...body })).rejects.toMatchObject({
        code: 2,
        codeName: 'BadValue',
      });
    const prefixes = { idsByPrefix: 'docs', prefixes: ['doc_01'], separator: ':' };
    for (const body of [
      { idsByPrefix: '' },
      { prefixes: 'doc_01' },
      { prefixes: [''] },
      { prefixes: [1] },
      { prefixes: Array.from({ length: 1001 }, (_, i) => `p${i}`) },
      { separator: '' },
      { separator: ' ' },
      { separator: '~' },
      { separator: '::' },
    ])
      await expect(target.command({ ...prefixes, ...body })).rejects.toMatchObject({
        code: 2,
        codeName: 'BadValue',
      });
    await expect(command({})).resolves.toMatchObject({ ok: 1, total: 20 });
  });

  it('when a command runs past its maxTimeMS, then it is MaxTimeMSExpired (50), and the next one is answered once the store answers', async () => {
    if (!pageIds) return;
    const held = await holdStoreTables(db.dbName);
    if (!held) return;
    const removal = { removeIdRange: 'docs', from: 'doc_00', below: 'doc_99', limit: 5, maxTimeMS: 200 };
    const target = mongo.db;
    if (!target) throw new Error('not connected');
    try {
      const expired = {
        code: 50,
        codeName: 'MaxTimeMSExpired',
        errmsg: 'operation exceeded time limit (200 ms)',
      };
      await expect(command({ maxTimeMS: 200 })).rejects.toMatchObject(expired);
      await expect(target.command(removal)).rejects.toMatchObject(expired);
    } finally {
      await held.release();
    }
    // No limit (0, as MongoDB reads it) is the wrapper's own; the store is answering again.
    await expect(command({ maxTimeMS: 0 })).resolves.toMatchObject({ ok: 1, total: 20 });
    await expect(command({ maxTimeMS: 5000 })).resolves.toMatchObject({ ok: 1, total: 20 });
  });
});
