import { ensureIndexes } from '@signal/service-kit';
import type { Connection, mongo } from 'mongoose';
import type { ProjectedSignal } from '../domain/projection';

/** The stats database: the projection as a typed driver collection through mongoose's connection. */
const PROJECTION_INDEXES: mongo.IndexDescription[] = [
  // Period filter (24h/7d/30d) for all types.
  { key: { created_at: -1 } },
  // Type + period filter.
  { key: { type: 1, created_at: -1 } },
  // best_roi: highest ROI, optionally by type, read as a sorted limit-1 query.
  { key: { roi: -1 } },
  { key: { type: 1, roi: -1 } },
];

export const projectionCollection = (c: Connection) => c.collection<ProjectedSignal>('signal_projection');

/** Every collection of the stats database with its indexes (start-up, idempotent). */
export async function ensureStatsCollections(c: Connection): Promise<void> {
  await ensureIndexes(c, 'signal_projection', PROJECTION_INDEXES);
}
