import type { SignalStatus, SignalType } from '@signal/contracts';
import { Schema, type Connection, type Model } from 'mongoose';

/** What stats needs of a signal, kept from events. */
export interface ProjectedSignal {
  _id: string;
  type: SignalType;
  status: SignalStatus;
  /** 1 when status is winner: `$sum` counts winners without `$cond` (MongoDB/FerretDB subset). */
  is_winner: 0 | 1;
  roi: number;
  created_at: Date;
  /** The signal's version; an older event never overwrites a newer one. */
  version: number;
}

const schema = new Schema(
  {
    _id: String,
    type: String,
    status: String,
    is_winner: Number,
    roi: Number,
    created_at: Date,
    version: Number,
  },
  { versionKey: false, collection: 'signal_projection' },
);
// Period filter (24h/7d/30d) for all types.
schema.index({ created_at: -1 });
// Type + period filter.
schema.index({ type: 1, created_at: -1 });
// best_roi: highest ROI, optionally by type, read as a sorted limit-1 query.
schema.index({ roi: -1 });
schema.index({ type: 1, roi: -1 });

export function projectionModel(c: Connection): Model<ProjectedSignal> {
  return c.models.ProjectedSignal ?? c.model<ProjectedSignal>('ProjectedSignal', schema);
}
