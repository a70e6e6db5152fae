import type { SignalEvent } from '@signal/contracts';
import { ensureIndexes } from '@signal/service-kit';
import type { Connection, mongo } from 'mongoose';
import type { SignalDocument } from '../domain/signal';

/**
 * The signals database: typed driver collections through mongoose's connection (mongoose adds
 * nothing here: documents are written and read whole, validated by the contracts at the API).
 */

/** The list is always ordered created_at desc, _id desc; ids are ULIDs stamped with created_at. */
const SIGNAL_INDEXES: mongo.IndexDescription[] = [
  // GET /v1/signals (no filter, or only `since`): walk this index from the newest.
  { key: { created_at: -1, _id: -1 } },
  // GET /v1/signals?type=… [&since=…]: equality on type, then the same order.
  { key: { type: 1, created_at: -1, _id: -1 } },
  // GET /v1/signals?status=… [&since=…]: equality on status, then the same order.
  { key: { 'performance.status': 1, created_at: -1, _id: -1 } },
  // GET /v1/signals?type=…&status=… [&since=…]: both equalities, then the same order.
  { key: { type: 1, 'performance.status': 1, created_at: -1, _id: -1 } },
  // Idempotent create: a retried create with the same key collides here and returns the first.
  { key: { idem_key: 1 }, unique: true },
  // Outbox relay: find the few signals with unpublished events.
  { key: { has_outbox: 1 } },
];

/**
 * The outbox of one bulk insert: its events in one document, written before the signals and
 * confirmed after them. Per-signal outbox entries would cost one update each to clear (FerretDB
 * manages ~100-300 a second), which capped backfills; a batch costs one write to confirm and
 * one delete once published.
 */
export interface OutboxBatchDocument {
  _id: string;
  events: SignalEvent[];
  /** false until the signals' insert returned; an old unconfirmed batch is checked signal by signal. */
  confirmed: boolean;
  created_at: Date;
}

/** A signal whose index update failed (Redis unreachable at write time), awaiting repair. */
export interface RepairDocument {
  _id: string;
  at: Date;
}

export const signalCollection = (c: Connection) => c.collection<SignalDocument>('signals');
export const outboxBatchCollection = (c: Connection) => c.collection<OutboxBatchDocument>('outbox_batches');
export const repairCollection = (c: Connection) => c.collection<RepairDocument>('timeline_repairs');

/** Every collection of the signals database with its indexes (start-up, idempotent). */
export async function ensureSignalCollections(c: Connection): Promise<void> {
  await ensureIndexes(c, 'signals', SIGNAL_INDEXES);
  await ensureIndexes(c, 'outbox_batches');
  await ensureIndexes(c, 'timeline_repairs');
}
