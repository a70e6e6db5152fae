import { SIGNAL_TYPES } from '@signal/contracts';
import { connectMongo } from '@signal/service-kit';
import { isFerretDB, testDatabase } from '@signal/test-kit';
import type { Connection } from 'mongoose';
import { ensureStatsCollections, projectionCollection } from '../src/data/collections';
import { groupSumsByType } from '../src/data/ferretdb-workarounds';
import { ProjectionRepository } from '../src/data/projection.repository';
import type { ProjectedSignal } from '../src/domain/projection';

/**
 * Why each workaround in src/data/ferretdb-workarounds.ts exists: the server behaviour it
 * works around, shown on FerretDB (on MongoDB the same code is checked to give the same result).
 */
const db = testDatabase('ferret_stats');
let mongo: Connection;
let ferret: boolean;

beforeAll(async () => {
  mongo = await connectMongo(db.url, db.dbName);
  await ensureStatsCollections(mongo);
  ferret = await isFerretDB(mongo);
});
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

const projected = (i: number, over: Partial<ProjectedSignal> = {}): ProjectedSignal => ({
  _id: `sig_${String(i).padStart(26, '0')}`,
  type: SIGNAL_TYPES[i % 3]!,
  status: i % 4 === 0 ? 'winner' : 'active',
  is_winner: i % 4 === 0 ? 1 : 0,
  roi: i * 1.5,
  created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000),
  version: 1,
  ...over,
});

describe('FerretDB workarounds of the stats projection', () => {
  it('when one $group has three accumulators, then FerretDB computes only the first, and one $group per sum gets all three', async () => {
    const rows = Array.from({ length: 24 }, (_, i) => projected(i));
    const projection = projectionCollection(mongo);
    await projection.insertMany(rows);
    const expected = SIGNAL_TYPES.slice(0, 3).map((type) => {
      const of = rows.filter((r) => r.type === type);
      return {
        _id: type,
        total: of.length,
        winners: of.filter((r) => r.is_winner === 1).length,
        roi_sum: of.reduce((sum, r) => sum + r.roi, 0),
      };
    });

    const together = await projection
      .aggregate([
        {
          $group: {
            _id: '$type',
            total: { $sum: 1 },
            winners: { $sum: '$is_winner' },
            roi_sum: { $sum: '$roi' },
          },
        },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    const byId = (a: { _id: string }, b: { _id: string }) => a._id.localeCompare(b._id);
    if (ferret) expect(together).toEqual(expected.map((e) => ({ ...e, winners: 0, roi_sum: 0 })).sort(byId));
    else expect(together).toEqual([...expected].sort(byId));

    expect((await groupSumsByType(projection, {})).sort(byId)).toEqual([...expected].sort(byId));
    await projection.deleteMany({});
  });

  it('when winners are counted with $cond inside $group, then FerretDB refuses it, and the stored 0/1 field counts them', async () => {
    const projection = projectionCollection(mongo);
    await projection.insertMany(
      [projected(4), projected(8), projected(5)].map((p) => ({ ...p, type: 'new' as const })),
    );
    const withCond = projection
      .aggregate([
        { $group: { _id: '$type', w: { $sum: { $cond: [{ $eq: ['$status', 'winner'] }, 1, 0] } } } },
      ])
      .toArray();
    if (ferret) await expect(withCond).rejects.toThrow(/\$cond is not implemented/);
    else expect(await withCond).toEqual([{ _id: 'new', w: 2 }]);
    expect(await groupSumsByType(projection, {})).toMatchObject([{ _id: 'new', winners: 2 }]);
    await projection.deleteMany({});
  });

  it('when ten versions of one signal are stored at once, then the newest stays, raw (the wrapper orders writes of one document) and through the repository', async () => {
    type Versioned = { _id: string; version: number };
    const raw = mongo.collection<Versioned>('version_race');
    let regressed = false;
    for (let round = 0; round < 5 && !regressed; round++) {
      await raw.deleteMany({});
      await raw.insertOne({ _id: 'doc', version: 1 });
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          raw.updateOne({ _id: 'doc', version: { $lt: i + 2 } }, { $set: { version: i + 2 } }),
        ),
      );
      regressed ||= (await raw.findOne({ _id: 'doc' }))?.version !== 11;
    }
    // FerretDB alone reads, modifies and writes without re-checking `version < new`; through the
    // wrapper (infra/ferretdb/doclocks.go) writes of one document run one at a time, as on MongoDB.
    expect(regressed).toBe(false);

    const repository = new ProjectionRepository(mongo);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => repository.apply(projected(99, { version: i + 1, roi: i }))),
    );
    expect(await projectionCollection(mongo).findOne({ _id: projected(99)._id })).toMatchObject({
      version: 10,
      roi: 9,
    });
  });
});
