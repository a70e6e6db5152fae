import type { SignalType } from '@signal/contracts';
import { duplicateKeyPositions, isDuplicateKeyError, type ReadLimit } from '@signal/service-kit';
import type { Connection, mongo } from 'mongoose';
import type { GroupRow, ProjectionStore } from '../domain/ports';
import type { ProjectedSignal } from '../domain/projection';
import { projectionCollection } from './collections';
import { groupSumsByType, oneUpdatePerDocumentAtATime } from './ferretdb-workarounds';

/** The stats projection: MongoDB through the driver's typed collection. */
export class ProjectionRepository implements ProjectionStore {
  private readonly writes = oneUpdatePerDocumentAtATime();
  private readonly projection: mongo.Collection<ProjectedSignal>;

  constructor(connection: Connection) {
    this.projection = projectionCollection(connection);
  }

  /** Applies a signal state if it is newer than what is stored; returns whether anything changed. */
  async apply(doc: ProjectedSignal): Promise<boolean> {
    return this.writes.run(doc._id, async () => {
      const { _id, ...rest } = doc;
      const r = await this.projection.updateOne({ _id, version: { $lt: doc.version } }, { $set: rest });
      if (r.matchedCount === 1) return true;
      try {
        await this.projection.insertOne(doc);
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false; // same or newer already there
        throw err;
      }
    });
  }

  /**
   * First versions (creates: backfills, new signals) in one unordered insertMany — the common
   * case costs one write per batch instead of a failed update and an insert per signal; those
   * already stored are done, and every later version goes through `apply` one by one.
   */
  async applyMany(docs: ProjectedSignal[]): Promise<Set<string>> {
    const changed = new Set<string>();
    const firsts = docs.filter((d) => d.version === 1);
    const rest = docs.filter((d) => d.version !== 1);
    if (firsts.length > 0) {
      let refused = new Set<number>();
      try {
        await this.projection.insertMany(firsts, { ordered: false });
      } catch (err) {
        const positions = duplicateKeyPositions(err);
        if (!positions) throw err;
        refused = positions;
      }
      // A first version refused as a duplicate: what is stored is that version or a newer one,
      // so nothing is left to do (a redelivered batch, say). Sending those through `apply` would
      // make each an update by `_id`, which FerretDB runs as a scan of the collection.
      for (const [i, d] of firsts.entries()) if (!refused.has(i)) changed.add(d._id);
    }
    const applied = await Promise.all(rest.map((d) => this.apply(d)));
    for (const [i, d] of rest.entries()) if (applied[i]) changed.add(d._id);
    return changed;
  }

  private filter(type: SignalType | undefined, since: Date | undefined): mongo.Filter<ProjectedSignal> {
    const q: mongo.Filter<ProjectedSignal> = {};
    if (type) q.type = type;
    if (since) q.created_at = { $gt: since };
    return q;
  }

  /** Counts, winners and ROI sums per type. */
  groupByType(
    type: SignalType | undefined,
    since: Date | undefined,
    within: ReadLimit = {},
  ): Promise<GroupRow[]> {
    return groupSumsByType(this.projection, this.filter(type, since), within);
  }

  async bestRoi(
    type: SignalType | undefined,
    since: Date | undefined,
    within: ReadLimit = {},
  ): Promise<number | undefined> {
    const top = await this.projection.findOne(this.filter(type, since), {
      projection: { roi: 1 },
      sort: { roi: -1 },
      ...within,
    });
    return top?.roi;
  }

  /** Every projected signal once, in batches: the aggregates' rebuild pass. */
  async *streamAll(batchSize: number): AsyncGenerator<ProjectedSignal[]> {
    let batch: ProjectedSignal[] = [];
    for await (const doc of this.projection.find({}, { batchSize })) {
      batch.push(doc);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }
}
