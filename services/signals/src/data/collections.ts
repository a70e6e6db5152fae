import type { BusEventName, EventContext, SignalEvent } from '@signal/contracts';
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
 * The outbox of one bulk insert, written before the signals. Per-signal outbox entries would
 * cost one update each to clear, and FerretDB manages only a few hundred a second: too few for
 * backfills.
 * It names its events (signal id, event id) instead of holding them: the snapshot of each is
 * the signal itself, and the writer hands the events to the relay in memory, so in the common
 * case the batch costs one small insert and one delete. Only a batch whose writer died (older
 * than a minute) is read back, its events rebuilt from the signals that exist. Holding the
 * events whole would make every event pass through the store five times (insert, confirm
 * update, relay read, removal read): at a million signals, more work for FerretDB than the
 * signals themselves.
 */
export interface OutboxBatchDocument {
  _id: string;
  entries?: Array<{ signal_id: string; event_id: string }>;
  event_name?: BusEventName;
  occurred_at?: Date;
  context?: EventContext;
  /** Batches written before entries: the events whole (still read). */
  events?: SignalEvent[];
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
