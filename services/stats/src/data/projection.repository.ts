import type { SignalType } from '@signal/contracts';
import { KeyedMutex, isDuplicateKeyError } from '@signal/service-kit';
import type { QueryFilter, Model } from 'mongoose';
import type { ProjectedSignal } from './projection.model';

export interface GroupRow {
  _id: SignalType;
  total: number;
  winners: number;
  roi_sum: number;
}

export class ProjectionRepository {
  /** Serialises this process's writes per signal (FerretDB updates are read-modify-write). */
  private readonly writes = new KeyedMutex();

  constructor(private readonly model: Model<ProjectedSignal>) {}

  async ensureIndexes(): Promise<void> {
    await this.model.createCollection().catch(() => undefined);
    await this.model.createIndexes();
  }

  /** Applies a signal state if it is newer than what is stored; returns whether anything changed. */
  async apply(doc: ProjectedSignal): Promise<boolean> {
    return this.writes.run(doc._id, async () => {
      const { _id, ...rest } = doc;
      const r = await this.model.collection.updateOne(
        { _id: _id as never, version: { $lt: doc.version } },
        { $set: rest },
      );
      if (r.matchedCount === 1) return true;
      try {
        await this.model.collection.insertOne(doc as never);
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false; // same or newer already there
        throw err;
      }
    });
  }

  private filter(type: SignalType | undefined, since: Date | undefined): QueryFilter<ProjectedSignal> {
    const q: QueryFilter<ProjectedSignal> = {};
    if (type) q.type = type;
    if (since) q.created_at = { $gt: since };
    return q;
  }

  /**
   * Counts, winners and ROI sums per type. One `$group` per accumulator: FerretDB 1.24
   * computes only the first accumulator of a `$group` and returns 0 for the others (found
   * here; see README), and one code path must serve MongoDB and FerretDB alike.
   */
  async groupByType(type: SignalType | undefined, since: Date | undefined): Promise<GroupRow[]> {
    const match = { $match: this.filter(type, since) };
    const sumBy = (value: 1 | string) =>
      this.model
        .aggregate<{ _id: SignalType; v: number }>([match, { $group: { _id: '$type', v: { $sum: value } } }])
        .exec();
    const [totals, winners, roiSums] = await Promise.all([sumBy(1), sumBy('$is_winner'), sumBy('$roi')]);
    const of = (rows: { _id: SignalType; v: number }[], t: SignalType) =>
      rows.find((r) => r._id === t)?.v ?? 0;
    return totals.map((t) => ({
      _id: t._id,
      total: t.v,
      winners: of(winners, t._id),
      roi_sum: of(roiSums, t._id),
    }));
  }

  async bestRoi(type: SignalType | undefined, since: Date | undefined): Promise<number | undefined> {
    const top = await this.model
      .find(this.filter(type, since), { roi: 1 })
      .sort({ roi: -1 })
      .limit(1)
      .lean<{ roi: number }[]>()
      .exec();
    return top[0]?.roi;
  }

  /** Every projected signal once, in batches: the aggregates' rebuild pass. */
  async *streamAll(batchSize: number): AsyncGenerator<ProjectedSignal[]> {
    let batch: ProjectedSignal[] = [];
    for await (const doc of this.model.find({}).lean<ProjectedSignal>().cursor({ batchSize })) {
      batch.push(doc);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  count(): Promise<number> {
    return this.model.countDocuments({}).exec();
  }
}
