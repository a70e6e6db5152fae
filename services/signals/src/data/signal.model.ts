import { Schema, type Connection, type Model } from 'mongoose';
import type { SignalEvent, SignalStatus, SignalType } from '@signal/contracts';

export interface SignalDocument {
  _id: string;
  token: {
    symbol: string;
    name: string;
    contract: string;
    age_hours: number;
    dex_paid: boolean;
    socials: { twitter: string | null; telegram: string | null; website: string | null };
  };
  metrics: {
    mcap_entry: number;
    mcap_current: number;
    mcap_ath: number;
    volume_24h: number;
    holders: number;
    liquidity: number;
  };
  performance: { roi: number; ath_roi: number; status: SignalStatus; time_to_ath_hours: number };
  type: SignalType;
  is_premium: boolean;
  created_at: Date;
  updated_at: Date;
  /** Bumped on every write; orders events of one signal and guards outbox clean-up. */
  version: number;
  /** The Idempotency-Key of the create (or the id itself), unique: a retried create finds the first. */
  idem_key: string;
  idem_hash: string;
  /** Events written in the same atomic write as the change they describe (transactional outbox). */
  outbox: SignalEvent[];
  has_outbox: boolean;
}

const signalSchema = new Schema(
  {
    _id: { type: String, required: true },
    token: {
      symbol: { type: String, required: true },
      name: { type: String, required: true },
      contract: { type: String, required: true },
      age_hours: { type: Number, required: true },
      dex_paid: { type: Boolean, required: true },
      socials: {
        twitter: { type: String, default: null },
        telegram: { type: String, default: null },
        website: { type: String, default: null },
      },
    },
    metrics: {
      mcap_entry: Number,
      mcap_current: Number,
      mcap_ath: Number,
      volume_24h: Number,
      holders: Number,
      liquidity: Number,
    },
    performance: { roi: Number, ath_roi: Number, status: String, time_to_ath_hours: Number },
    type: { type: String, required: true },
    is_premium: { type: Boolean, required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
    version: { type: Number, required: true },
    idem_key: { type: String, required: true },
    idem_hash: { type: String, required: true },
    outbox: { type: Schema.Types.Mixed, default: [] },
    has_outbox: { type: Boolean, required: true },
  },
  { versionKey: false, collection: 'signals', minimize: false },
);

// The list is always ordered created_at desc, _id desc. Ids are ULIDs stamped with
// created_at, so `_id < cursor` is the keyset condition for every index below.
// GET /v1/signals (no filter, or only `since`): walk this index from the newest.
signalSchema.index({ created_at: -1, _id: -1 });
// GET /v1/signals?type=… [&since=…]: equality on type, then the same order.
signalSchema.index({ type: 1, created_at: -1, _id: -1 });
// GET /v1/signals?status=… [&since=…]: equality on status, then the same order.
signalSchema.index({ 'performance.status': 1, created_at: -1, _id: -1 });
// GET /v1/signals?type=…&status=… [&since=…]: both equalities, then the same order.
signalSchema.index({ type: 1, 'performance.status': 1, created_at: -1, _id: -1 });
// Idempotent create: a retried create with the same key collides here and returns the first.
signalSchema.index({ idem_key: 1 }, { unique: true });
// Outbox relay: find the few signals with unpublished events.
signalSchema.index({ has_outbox: 1 });

export type SignalModel = Model<SignalDocument>;

export function signalModel(connection: Connection): SignalModel {
  return connection.models.Signal ?? connection.model<SignalDocument>('Signal', signalSchema);
}
