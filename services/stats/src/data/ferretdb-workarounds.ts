import { signalTypeSchema, type SignalType } from '@signal/contracts';
import { KeyedMutex, type ReadLimit } from '@signal/service-kit';
import type { mongo } from 'mongoose';
import { z } from 'zod';
import type { GroupRow } from '../domain/ports';
import type { ProjectedSignal } from '../domain/projection';

/**
 * What the stats projection does differently because of FerretDB 1.24, the MongoDB-wire server
 * of machines without MongoDB (CI, the local run command). One code path serves MongoDB and
 * FerretDB alike; on MongoDB each of these costs nothing or next to nothing.
 * test/ferretdb-workarounds.test.ts shows, for each, the server behaviour it works around.
 *
 * - Winners are summed from a stored 0/1 field (`is_winner`), not with `$cond`, which
 *   FerretDB does not implement inside `$group`.
 */

/**
 * FerretDB applies an update as read-modify-write of the whole document without re-checking
 * the filter, so two concurrent version-guarded updates of one document can both "match" and
 * an older state can overwrite a newer one. Every update of one signal from this process runs
 * through this lock (so run one stats instance on FerretDB).
 */
export const oneUpdatePerDocumentAtATime = (): KeyedMutex => new KeyedMutex();

const sumRowsSchema = z.array(z.object({ _id: signalTypeSchema, v: z.number() }));
type SumRow = z.infer<typeof sumRowsSchema>[number];

/**
 * FerretDB computes only the first accumulator of a `$group` and returns 0 for the others, so
 * counts, winners and ROI sums per type are one `$group` each (run in parallel), joined by
 * type here.
 */
export async function groupSumsByType(
  projection: mongo.Collection<ProjectedSignal>,
  match: mongo.Filter<ProjectedSignal>,
  within: ReadLimit = {},
): Promise<GroupRow[]> {
  const sumBy = async (value: 1 | '$is_winner' | '$roi'): Promise<SumRow[]> =>
    sumRowsSchema.parse(
      await projection
        .aggregate([{ $match: match }, { $group: { _id: '$type', v: { $sum: value } } }], within)
        .toArray(),
    );
  const [totals, winners, roiSums] = await Promise.all([sumBy(1), sumBy('$is_winner'), sumBy('$roi')]);
  const of = (rows: SumRow[], type: SignalType) => rows.find((r) => r._id === type)?.v ?? 0;
  return totals.map((t) => ({
    _id: t._id,
    total: t.v,
    winners: of(winners, t._id),
    roi_sum: of(roiSums, t._id),
  }));
}
