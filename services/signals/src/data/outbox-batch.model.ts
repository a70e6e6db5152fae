import type { SignalEvent } from '@signal/contracts';
import { Schema, type Connection, type Model } from 'mongoose';

/**
 * The outbox of one bulk insert: its events in one document, written before the signals and
 * confirmed after them. Per-signal outbox entries would cost one MongoDB update each to clear
 * (FerretDB manages ~100-300 a second), which capped backfills; a batch costs one write to
 * confirm and one delete once published.
 */
export interface OutboxBatchDocument {
  _id: string;
  events: SignalEvent[];
  /** false until the signals' insert returned; an old unconfirmed batch is checked signal by signal. */
  confirmed: boolean;
  created_at: Date;
}

const schema = new Schema<OutboxBatchDocument>(
  {
    _id: { type: String, required: true },
    events: { type: Schema.Types.Mixed, default: [] },
    confirmed: { type: Boolean, required: true },
    created_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'outbox_batches', minimize: false },
);

export type OutboxBatchModel = Model<OutboxBatchDocument>;

export function outboxBatchModel(connection: Connection): OutboxBatchModel {
  return connection.models.OutboxBatch ?? connection.model<OutboxBatchDocument>('OutboxBatch', schema);
}
