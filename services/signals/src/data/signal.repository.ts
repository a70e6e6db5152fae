import type { SignalEvent, SignalStatus, SignalType } from '@signal/contracts';
import { KeyedMutex, duplicateKeyPositions, isDuplicateKeyError } from '@signal/service-kit';
import type { QueryFilter } from 'mongoose';
import type { OutboxBatchDocument, OutboxBatchModel } from './outbox-batch.model';
import type { SignalDocument, SignalModel } from './signal.model';

/** Outbox ids of bulk batches carry this prefix; plain ids are signals. */
export const BATCH_PREFIX = 'batch:';
/** An unconfirmed batch older than this lost its writer (crash between its writes). */
const ORPHAN_BATCH_MS = 60_000;

export interface SignalFilter {
  type?: SignalType;
  status?: SignalStatus;
  since?: Date;
  /** Keyset paging: only signals older than this id. */
  beforeId?: string;
  /** Only signals at or newer than this id (to number the page a cursor lands on). */
  fromId?: string;
}

export type StoredSignal = Omit<SignalDocument, 'outbox' | 'has_outbox'>;
const PUBLIC_PROJECTION = { outbox: 0, has_outbox: 0 } as const;

interface PendingOutbox {
  documentId: string;
  events: SignalEvent[];
}

export class DuplicateIdempotencyKeyError extends Error {}

/** Persistence of signals; returns plain objects (`lean`), never mongoose documents. */
export class SignalRepository {
  /** Serialises this process's writes to one signal (see KeyedMutex for why). */
  private readonly writes = new KeyedMutex();

  constructor(
    private readonly model: SignalModel,
    private readonly batches: OutboxBatchModel,
  ) {}

  private toQuery(filter: SignalFilter): QueryFilter<SignalDocument> {
    const q: QueryFilter<SignalDocument> = {};
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

  async list(filter: SignalFilter, skip: number, limit: number): Promise<StoredSignal[]> {
    return this.model
      .find(this.toQuery(filter), PUBLIC_PROJECTION)
      .sort({ created_at: -1, _id: -1 })
      .skip(skip)
      .limit(limit)
      .lean<StoredSignal[]>()
      .exec();
  }

  async count(filter: SignalFilter): Promise<number> {
    return this.model.countDocuments(this.toQuery(filter)).exec();
  }

  async findById(id: string): Promise<StoredSignal | null> {
    return this.model.findById(id, PUBLIC_PROJECTION).lean<StoredSignal>().exec();
  }

  async findByIdemKey(key: string): Promise<StoredSignal | null> {
    return this.model.findOne({ idem_key: key }, PUBLIC_PROJECTION).lean<StoredSignal>().exec();
  }

  /** Inserts a new signal with its `signal.new` event in one atomic write. */
  async insert(doc: SignalDocument): Promise<void> {
    try {
      await this.model.collection.insertOne(doc as never);
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new DuplicateIdempotencyKeyError(doc.idem_key);
      throw err;
    }
  }

  /**
   * Bulk insert with one outbox batch: the batch (all events) first, then the signals, then the
   * batch confirmed without the events of signals whose idempotency key already existed.
   * Returns those keys and the batch's outbox id.
   */
  async insertManyWithBatch(
    docs: SignalDocument[],
    batchId: string,
  ): Promise<{ duplicates: string[]; outboxId: string }> {
    const events = docs.flatMap((d) => d.outbox);
    const plain = docs.map((d) => ({ ...d, outbox: [], has_outbox: false }));
    await this.batches.create({ _id: batchId, events, confirmed: false, created_at: new Date() });
    let duplicates: string[] = [];
    try {
      await this.model.collection.insertMany(plain as never[], { ordered: false });
    } catch (err) {
      const refused = duplicateKeyPositions(err);
      if (!refused) throw err;
      duplicates = [...refused].map((i) => docs[i]!.idem_key);
    }
    const skipped = new Set(duplicates);
    const refusedIds = new Set(docs.filter((d) => skipped.has(d.idem_key)).map((d) => d._id));
    await this.batches
      .updateOne(
        { _id: batchId },
        {
          $set: {
            confirmed: true,
            ...(refusedIds.size ? { events: events.filter((e) => !refusedIds.has(e.signal.id)) } : {}),
          },
        },
      )
      .exec();
    return { duplicates, outboxId: `${BATCH_PREFIX}${batchId}` };
  }

  private async batchOutbox(batch: OutboxBatchDocument): Promise<PendingOutbox | undefined> {
    if (batch.confirmed) return { documentId: `${BATCH_PREFIX}${batch._id}`, events: batch.events };
    if (Date.now() - new Date(batch.created_at).getTime() < ORPHAN_BATCH_MS) return undefined;
    // Its writer died between the writes: keep the events of the signals that exist.
    const exists = await Promise.all(batch.events.map((e) => this.model.exists({ _id: e.signal.id }).exec()));
    const events = batch.events.filter((_, i) => exists[i] !== null);
    await this.batches.updateOne({ _id: batch._id }, { $set: { confirmed: true, events } }).exec();
    return { documentId: `${BATCH_PREFIX}${batch._id}`, events };
  }

  /**
   * Compare-and-set on `version`: writes the new state and appends its event atomically.
   * Returns false when someone else changed the signal first (caller re-reads and retries).
   */
  async replaceState(
    id: string,
    expectedVersion: number,
    set: Partial<Pick<SignalDocument, 'metrics' | 'performance' | 'updated_at'>>,
    event: SignalEvent,
  ): Promise<boolean> {
    const result = await this.writes.run(id, () =>
      this.model.collection.updateOne(
        { _id: id as never, version: expectedVersion },
        {
          $set: { ...set, version: expectedVersion + 1, has_outbox: true },
          $push: { outbox: event as never },
        },
      ),
    );
    return result.matchedCount === 1;
  }

  async findPendingOutbox(limit: number): Promise<PendingOutbox[]> {
    const batches = await this.batches
      .find({})
      .limit(Math.max(1, Math.floor(limit / 100)))
      .lean<OutboxBatchDocument[]>()
      .exec();
    const fromBatches = (await Promise.all(batches.map((b) => this.batchOutbox(b)))).filter(
      (b): b is PendingOutbox => b !== undefined,
    );
    const docs = await this.model
      .find({ has_outbox: true }, { outbox: 1 })
      .limit(limit)
      .lean<Array<{ _id: string; outbox: SignalEvent[] }>>()
      .exec();
    return [...fromBatches, ...docs.map((d) => ({ documentId: d._id, events: d.outbox ?? [] }))];
  }

  /**
   * One `_id` lookup per id, in parallel: an `_id` equality is the one filter every backend
   * serves from its index (FerretDB 1.24 scans the collection for `$in`).
   */
  async findPendingByIds(ids: string[]): Promise<PendingOutbox[]> {
    const batchIds = ids
      .filter((id) => id.startsWith(BATCH_PREFIX))
      .map((id) => id.slice(BATCH_PREFIX.length));
    const batches = await Promise.all(
      batchIds.map((id) => this.batches.findById(id).lean<OutboxBatchDocument>().exec()),
    );
    const fromBatches = batches.flatMap((b) =>
      b?.confirmed ? [{ documentId: `${BATCH_PREFIX}${b._id}`, events: b.events }] : [],
    );
    const docs = await Promise.all(
      ids
        .filter((id) => !id.startsWith(BATCH_PREFIX))
        .map((id) =>
          this.model
            .findById(id, { outbox: 1, has_outbox: 1 })
            .lean<{ _id: string; outbox: SignalEvent[]; has_outbox: boolean }>()
            .exec(),
        ),
    );
    return [
      ...fromBatches,
      ...docs.flatMap((d) => (d?.has_outbox ? [{ documentId: d._id, events: d.outbox ?? [] }] : [])),
    ];
  }

  /** Removes published events; a concurrent append (version moved) makes it re-read and retry. */
  async removeFromOutbox(id: string, eventIds: string[]): Promise<void> {
    if (id.startsWith(BATCH_PREFIX))
      return this.removeFromBatch(id.slice(BATCH_PREFIX.length), new Set(eventIds));
    await this.writes.run(id, () => this.removeUnlocked(id, new Set(eventIds)));
  }

  /** Only the relay changes a confirmed batch: delete it when done, else keep what is left. */
  private async removeFromBatch(batchId: string, published: Set<string>): Promise<void> {
    const batch = await this.batches.findById(batchId).lean<OutboxBatchDocument>().exec();
    if (!batch) return;
    const remaining = batch.events.filter((e) => !published.has(e.id));
    if (remaining.length === 0) await this.batches.deleteOne({ _id: batchId }).exec();
    else await this.batches.updateOne({ _id: batchId }, { $set: { events: remaining } }).exec();
  }

  private async removeUnlocked(id: string, published: Set<string>): Promise<void> {
    for (let i = 0; i < 10; i++) {
      const doc = await this.model
        .findById(id, { outbox: 1, version: 1 })
        .lean<{ outbox: SignalEvent[]; version: number }>()
        .exec();
      if (!doc) return;
      const remaining = (doc.outbox ?? []).filter((e) => !published.has(e.id));
      const result = await this.model.collection.updateOne(
        { _id: id as never, version: doc.version },
        { $set: { outbox: remaining, has_outbox: remaining.length > 0 } },
      );
      if (result.matchedCount === 1) return;
    }
    throw new Error(`outbox of ${id} kept changing`);
  }

  /** Internal export for projections: signals in id order after `afterId`. */
  async exportPage(afterId: string | undefined, limit: number): Promise<StoredSignal[]> {
    return this.model
      .find(afterId ? { _id: { $gt: afterId } } : {}, PUBLIC_PROJECTION)
      .sort({ _id: 1 })
      .limit(limit)
      .lean<StoredSignal[]>()
      .exec();
  }

  /** Every signal once, in batches, in natural order: the index rebuild's single pass. */
  async *streamAll(batchSize: number): AsyncGenerator<StoredSignal[]> {
    const cursor = this.model.find({}, PUBLIC_PROJECTION).lean<StoredSignal[]>().cursor({ batchSize });
    let batch: StoredSignal[] = [];
    for await (const doc of cursor) {
      batch.push(doc);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  async ensureIndexes(): Promise<void> {
    await this.model.createCollection().catch(() => undefined);
    await this.model.createIndexes();
    await this.batches.createCollection().catch(() => undefined);
  }
}
