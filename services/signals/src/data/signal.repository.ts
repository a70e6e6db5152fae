import { SIGNAL_EVENT_VERSION, type SignalEvent } from '@signal/contracts';
import { duplicateKeyPositions, isDuplicateKeyError, type ReadLimit } from '@signal/service-kit';
import type { Connection, mongo } from 'mongoose';
import type {
  InsertSignalOutcome,
  SignalFilter,
  SignalQueryStore,
  SignalSource,
  SignalWriteStore,
} from '../domain/ports';
import type { SignalDocument, SignalStateChange, StoredSignal } from '../domain/signal';
import { toSnapshot } from '../domain/signal.mapper';
import { outboxBatchCollection, signalCollection, type OutboxBatchDocument } from './collections';
import { eachById, oneUpdatePerDocumentAtATime, trimOutbox } from './ferretdb-workarounds';

/** Outbox ids of bulk batches carry this prefix; plain ids are signals. */
export const BATCH_PREFIX = 'batch:';
/** An unconfirmed batch older than this lost its writer (crash between its writes). */
const ORPHAN_BATCH_MS = 60_000;
/** Reads return signals without their pending events. */
const PUBLIC_PROJECTION = { outbox: 0, has_outbox: 0 } as const;

export interface PendingOutbox {
  documentId: string;
  events: SignalEvent[];
}

/** The signals store: MongoDB through the driver's typed collections. */
export class SignalRepository implements SignalWriteStore, SignalQueryStore, SignalSource {
  private readonly writes = oneUpdatePerDocumentAtATime();
  private readonly signals: mongo.Collection<SignalDocument>;
  private readonly batches: mongo.Collection<OutboxBatchDocument>;

  constructor(connection: Connection) {
    this.signals = signalCollection(connection);
    this.batches = outboxBatchCollection(connection);
  }

  private toQuery(filter: SignalFilter): mongo.Filter<SignalDocument> {
    const q: mongo.Filter<SignalDocument> = {};
    if (filter.type) q.type = filter.type;
    if (filter.status) q['performance.status'] = filter.status;
    if (filter.since) q.created_at = { $gt: filter.since };
    if (filter.beforeId || filter.fromId) {
      q._id = {
        ...(filter.beforeId ? { $lt: filter.beforeId } : {}),
        ...(filter.fromId ? { $gte: filter.fromId } : {}),
      };
    }
    return q;
  }

  list(filter: SignalFilter, skip: number, limit: number, within: ReadLimit = {}): Promise<StoredSignal[]> {
    return this.signals
      .find(this.toQuery(filter), {
        projection: PUBLIC_PROJECTION,
        sort: { created_at: -1, _id: -1 },
        skip,
        limit,
        ...within,
      })
      .toArray();
  }

  count(filter: SignalFilter, within: ReadLimit = {}): Promise<number> {
    return this.signals.countDocuments(this.toQuery(filter), within);
  }

  findById(id: string): Promise<StoredSignal | null> {
    return this.signals.findOne({ _id: id }, { projection: PUBLIC_PROJECTION });
  }

  findByIdemKey(key: string): Promise<StoredSignal | null> {
    return this.signals.findOne({ idem_key: key }, { projection: PUBLIC_PROJECTION });
  }

  /** Inserts a new signal with its `signal.new` event in one atomic write. */
  async insert(doc: SignalDocument): Promise<InsertSignalOutcome> {
    try {
      await this.signals.insertOne(doc);
      return 'inserted';
    } catch (err) {
      if (isDuplicateKeyError(err)) return 'duplicate';
      throw err;
    }
  }

  /**
   * Bulk insert with one outbox batch: the batch (naming every event) first, then the signals.
   * Returns the keys that already existed and the batch's events of the signals stored, for
   * the relay to publish from memory (see OutboxBatchDocument).
   */
  async insertManyWithBatch(
    docs: SignalDocument[],
    batchId: string,
  ): Promise<{ duplicates: string[]; outbox: PendingOutbox }> {
    const events = docs.flatMap((d) => d.outbox);
    const first = events[0];
    await this.batches.insertOne({
      _id: batchId,
      entries: events.map((e) => ({ signal_id: e.signal.id, event_id: e.id })),
      ...(first
        ? {
            event_name: first.name,
            occurred_at: new Date(first.occurred_at),
            ...(first.context ? { context: first.context } : {}),
          }
        : {}),
      created_at: new Date(),
    });
    let duplicates: string[] = [];
    try {
      await this.signals.insertMany(
        docs.map((d) => ({ ...d, outbox: [], has_outbox: false })),
        { ordered: false },
      );
    } catch (err) {
      const refused = duplicateKeyPositions(err);
      if (!refused) throw err;
      duplicates = [...refused].map((i) => docs[i]!.idem_key);
    }
    const skipped = new Set(duplicates);
    const refusedIds = new Set(docs.filter((d) => skipped.has(d.idem_key)).map((d) => d._id));
    return {
      duplicates,
      outbox: {
        documentId: `${BATCH_PREFIX}${batchId}`,
        events: events.filter((e) => !refusedIds.has(e.signal.id)),
      },
    };
  }

  /**
   * A batch read back from the store: none while young (its writer is still at work, and
   * hands the events over itself), else the events of the signals that exist — rebuilt from
   * them, with the event ids the batch names (a writer that died between its two writes).
   */
  private async batchOutbox(batch: OutboxBatchDocument): Promise<PendingOutbox | undefined> {
    if (Date.now() - new Date(batch.created_at).getTime() < ORPHAN_BATCH_MS) return undefined;
    const documentId = `${BATCH_PREFIX}${batch._id}`;
    const named =
      batch.entries ?? (batch.events ?? []).map((e) => ({ signal_id: e.signal.id, event_id: e.id }));
    const found = await eachById(
      named.map((e) => e.signal_id),
      (id) => this.signals.findOne({ _id: id }, { projection: PUBLIC_PROJECTION }),
    );
    const events: SignalEvent[] = [];
    for (const [i, entry] of named.entries()) {
      const signal = found[i];
      if (!signal) continue;
      const old = batch.events?.[i];
      events.push(
        old ?? {
          schema_version: SIGNAL_EVENT_VERSION,
          id: entry.event_id,
          name: batch.event_name ?? 'signal.updated',
          occurred_at: (batch.occurred_at ?? batch.created_at).toISOString(),
          signal: toSnapshot(signal),
          ...(batch.context ? { context: batch.context } : {}),
        },
      );
    }
    return { documentId, events };
  }

  /**
   * Compare-and-set on `version`: writes the new state and appends its event atomically.
   * Returns false when someone else changed the signal first (caller re-reads and retries).
   */
  async replaceState(
    id: string,
    expectedVersion: number,
    set: SignalStateChange,
    event: SignalEvent,
  ): Promise<boolean> {
    const result = await this.writes.run(id, () =>
      this.signals.updateOne(
        { _id: id, version: expectedVersion },
        {
          $set: { ...set, version: expectedVersion + 1, has_outbox: true },
          $push: { outbox: event },
        },
      ),
    );
    return result.matchedCount === 1;
  }

  async findPendingOutbox(limit: number): Promise<PendingOutbox[]> {
    const batches = await this.batches.find({}, { limit: Math.max(1, Math.floor(limit / 100)) }).toArray();
    const fromBatches = (await Promise.all(batches.map((b) => this.batchOutbox(b)))).filter(
      (b): b is PendingOutbox => b !== undefined,
    );
    const docs = await this.signals
      .find({ has_outbox: true }, { projection: { outbox: 1 }, limit })
      .toArray();
    return [...fromBatches, ...docs.map((d) => ({ documentId: d._id, events: d.outbox ?? [] }))];
  }

  /** The pending events of the given outbox ids (signals or batches). */
  async findPendingByIds(ids: string[]): Promise<PendingOutbox[]> {
    const batchIds = ids
      .filter((id) => id.startsWith(BATCH_PREFIX))
      .map((id) => id.slice(BATCH_PREFIX.length));
    const batches = await eachById(batchIds, (id) => this.batches.findOne({ _id: id }));
    const fromBatches = (await Promise.all(batches.map((b) => (b ? this.batchOutbox(b) : undefined)))).filter(
      (b): b is PendingOutbox => b !== undefined,
    );
    const docs = await eachById(
      ids.filter((id) => !id.startsWith(BATCH_PREFIX)),
      (id) => this.signals.findOne({ _id: id }, { projection: { outbox: 1, has_outbox: 1 } }),
    );
    return [
      ...fromBatches,
      ...docs.flatMap((d) => (d?.has_outbox ? [{ documentId: d._id, events: d.outbox ?? [] }] : [])),
    ];
  }

  /**
   * Removes published events; a concurrent append (version moved) makes it re-read and retry.
   * `all`: every event the relay had for the document was confirmed (a batch is then deleted
   * without being read).
   */
  async removeFromOutbox(id: string, eventIds: string[], all = false): Promise<void> {
    if (id.startsWith(BATCH_PREFIX))
      return this.removeFromBatch(id.slice(BATCH_PREFIX.length), new Set(eventIds), all);
    await this.writes.run(id, () => trimOutbox(this.signals, id, new Set(eventIds)));
  }

  /** Only the relay changes a batch once written: delete it when done, else keep what is left. */
  private async removeFromBatch(batchId: string, published: Set<string>, all: boolean): Promise<void> {
    if (all) {
      await this.batches.deleteOne({ _id: batchId });
      return;
    }
    const batch = await this.batches.findOne({ _id: batchId });
    if (!batch) return;
    const remaining = batch.entries
      ? { entries: batch.entries.filter((e) => !published.has(e.event_id)) }
      : { events: (batch.events ?? []).filter((e) => !published.has(e.id)) };
    if ((remaining.entries ?? remaining.events ?? []).length === 0)
      await this.batches.deleteOne({ _id: batchId });
    else await this.batches.updateOne({ _id: batchId }, { $set: remaining });
  }

  /** Internal export for projections: signals in id order after `afterId`. */
  exportPage(afterId: string | undefined, limit: number): Promise<StoredSignal[]> {
    return this.signals
      .find(afterId ? { _id: { $gt: afterId } } : {}, {
        projection: PUBLIC_PROJECTION,
        sort: { _id: 1 },
        limit,
      })
      .toArray();
  }

  /** Every signal once, in batches, in natural order: the index rebuild's single pass. */
  async *streamAll(batchSize: number): AsyncGenerator<StoredSignal[]> {
    let batch: StoredSignal[] = [];
    for await (const doc of this.signals.find({}, { projection: PUBLIC_PROJECTION, batchSize })) {
      batch.push(doc);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }
}
