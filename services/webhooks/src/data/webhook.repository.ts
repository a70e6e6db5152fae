import {
  duplicateKeyPositions,
  eachById,
  idTimeMs,
  isDuplicateKeyError,
  type LatestRecordFilter,
  type PageIdsQuery,
  type ReadLimit,
  type StoreIdCommands,
} from '@signal/service-kit';
import type { WebhookEventName } from '@signal/contracts';
import type { mongo } from 'mongoose';
import type { DeliveryMark, DeliveryPageStart, SubscriptionSource, WebhookStore } from '../domain/ports';
import type {
  AttemptClaim,
  DeliveryDocument,
  DeliveryHeader,
  DeliveryLogEntry,
  OpenDelivery,
  SubscriptionDocument,
} from '../domain/records';
import type { HealthBatch } from '../domain/health';
import { healthUpdates } from '../domain/health';
import { DELIVERY_ID_PREFIX, LOG_ID_SEPARATOR } from '../domain/delivery-state';
import { removeInBatches } from './paced-batches';
import { fromStoredLogEntry, toStoredLogEntry } from './stored-log-entry';
import type { WebhookCollections } from './webhook.models';

/** Documents a sweep removes per statement: short enough to stop between batches. */
const REMOVE_BATCH = 5000;

export interface WebhookRepositoryOptions {
  /** Documents retention removes per statement (a test's smaller batches cross several with a few hundred). */
  removeBatch?: number;
  /**
   * How long the store may take over one read of a delivery list whose cost follows the
   * subscription's history (its page and count, or its fold) before it stops with
   * MaxTimeMSExpired: past the gateway's wait it reads for no one.
   */
  listReadMaxMs?: number;
}

const WITHOUT_PAYLOAD = { projection: { payload: 0 } } as const;
const WITHOUT_EXCHANGE = { projection: { request: 0, response: 0, exchange: 0 } } as const;
/** The most prefixes the store's `idsByPrefix` takes in one call. */
const ID_PREFIXES_PER_CALL = 1000;

/** Runs an unordered insertMany; the positions refused as duplicates (any other failure throws). */
async function insertAll(insert: () => Promise<unknown>): Promise<Set<number>> {
  try {
    await insert();
    return new Set();
  } catch (err) {
    const duplicates = duplicateKeyPositions(err);
    if (!duplicates) throw err;
    return duplicates;
  }
}

/** Reads by several ids, one equality read per distinct id (service-kit's `eachById`: FerretDB does not push `$in` down). */
async function readEach<T>(ids: readonly string[], read: (id: string) => Promise<T[]>): Promise<T[]> {
  return (await eachById([...new Set(ids)], read)).flat();
}

/** Subscriptions, deliveries and the delivery log; always scoped by account where a client asks. */
export class WebhookRepository implements WebhookStore, SubscriptionSource {
  readonly pageDeliveriesByStatus: WebhookStore['pageDeliveriesByStatus'];
  private readonly removeBatch: number;
  /** The time limit of a list's reads, as the store takes it. */
  private readonly listRead: ReadLimit;

  /**
   * `storeIds`: the store's own id commands (the embedded FerretDB's, see service-kit's
   * `storeIdCommands`), which page a subscription's deliveries at index cost where a sorted find
   * and a count would read its whole history, and remove a range of ids by one statement where
   * FerretDB would read every document; undefined on MongoDB, whose indexes serve both.
   */
  constructor(
    private readonly c: WebhookCollections,
    private readonly storeIds?: StoreIdCommands,
    options: WebhookRepositoryOptions = {},
  ) {
    this.removeBatch = options.removeBatch ?? REMOVE_BATCH;
    this.listRead = options.listReadMaxMs === undefined ? {} : { maxTimeMS: options.listReadMaxMs };
    const byLatest = storeIds?.pageByLatest;
    // A delivery's status is its log's last entry's (by `seq`), or, with no entry yet, the one it
    // was stored with: the store finds each delivery's last entry by the log's `_id` index (entry
    // ids begin with their delivery's), or by its `delivery_id` index on a wrapper without that.
    this.pageDeliveriesByStatus =
      byLatest &&
      ((webhookId, event, status, from, limit) => {
        const latest: LatestRecordFilter = {
          from: c.deliveryLog.collectionName,
          link: 'delivery_id',
          ...(storeIds.idsByPrefix ? { separator: LOG_ID_SEPARATOR } : {}),
          order: 'seq',
          field: 'status',
          equals: status,
          fallback: 'status',
        };
        return this.pageDeliveriesByIds(
          (collection, query) => byLatest(collection, { ...query, ...this.listRead, latest }),
          webhookId,
          event,
          from,
          limit,
        );
      });
  }

  async insertSubscription(doc: SubscriptionDocument): Promise<void> {
    await this.c.subscriptions.insertOne(doc);
  }

  findSubscription(accountId: string, id: string): Promise<SubscriptionDocument | null> {
    return this.c.subscriptions.findOne({ _id: id, account_id: accountId });
  }

  /**
   * A page of an account's subscriptions, newest first, and how many it has. `_id` breaks ties
   * of the same millisecond, so a subscription never sits on two pages or on none.
   */
  async pageSubscriptions(
    accountId: string,
    skip: number,
    limit: number,
  ): Promise<{ rows: SubscriptionDocument[]; total: number }> {
    const q: mongo.Filter<SubscriptionDocument> = { account_id: accountId };
    const [rows, total] = await Promise.all([
      this.c.subscriptions.find(q).sort({ created_at: -1, _id: -1 }).skip(skip).limit(limit).toArray(),
      this.c.subscriptions.countDocuments(q),
    ]);
    return { rows, total };
  }

  /**
   * Takes one of the account's `limit` places for subscription `id`: false when all are taken.
   * One conditional update of the account's places document, so concurrent creations on any
   * replica never take more than `limit` (a check-then-insert lets a slower creation that
   * counted first land after a faster one already kept its place).
   */
  async takePlace(accountId: string, id: string, limit: number): Promise<boolean> {
    await this.ensurePlaces(accountId);
    const r = await this.c.subscriptionPlaces.updateOne(
      { _id: accountId, used: { $lt: limit } },
      { $inc: { used: 1 }, $push: { ids: id } },
    );
    return r.modifiedCount === 1;
  }

  async releasePlace(accountId: string, id: string): Promise<void> {
    await this.c.subscriptionPlaces.updateOne(
      { _id: accountId, ids: id },
      { $inc: { used: -1 }, $pull: { ids: id } },
    );
  }

  /**
   * Gives back places taken before `before` (ms) by creations that never stored their
   * subscription (a crash between the two writes); how many were given back.
   */
  async releaseLostPlaces(accountId: string, before: number): Promise<number> {
    const places = await this.c.subscriptionPlaces.findOne({ _id: accountId });
    const old = (places?.ids ?? []).filter((id) => idTimeMs(id) < before);
    const stored = new Set(
      (
        await readEach(old, (id) =>
          this.c.subscriptions.find({ _id: id }, { projection: { _id: 1 } }).toArray(),
        )
      ).map((r) => r._id),
    );
    const lost = old.filter((id) => !stored.has(id));
    for (const id of lost) await this.releasePlace(accountId, id);
    return lost.length;
  }

  /** An account's first place taken starts from the subscriptions it holds (made before places were kept). */
  private async ensurePlaces(accountId: string): Promise<void> {
    if (await this.c.subscriptionPlaces.findOne({ _id: accountId }, { projection: { _id: 1 } })) return;
    const held = await this.c.subscriptions
      .find({ account_id: accountId }, { projection: { _id: 1 } })
      .toArray();
    await this.c.subscriptionPlaces
      .insertOne({ _id: accountId, ids: held.map((r) => r._id), used: held.length })
      .catch((err: unknown) => {
        // Another creation made it first: its document is the one.
        if (!isDuplicateKeyError(err)) throw err;
      });
  }

  /** Enabled and disabled alike: a disabled subscription's deliveries are kept (as failed), not dropped. */
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]> {
    return this.c.subscriptions.find({ events: event }).toArray();
  }

  findSubscriptionsByIds(ids: readonly string[]): Promise<SubscriptionDocument[]> {
    return readEach(ids, (id) => this.c.subscriptions.find({ _id: id }).toArray());
  }

  async updateSubscription(
    accountId: string,
    id: string,
    set: Partial<SubscriptionDocument>,
  ): Promise<SubscriptionDocument | null> {
    const r = await this.c.subscriptions.updateOne({ _id: id, account_id: accountId }, { $set: set });
    return r.matchedCount ? this.findSubscription(accountId, id) : null;
  }

  async updateSubscriptionIfUnchanged(
    accountId: string,
    id: string,
    updatedAt: Date,
    set: Partial<SubscriptionDocument>,
  ): Promise<SubscriptionDocument | 'changed' | null> {
    const r = await this.c.subscriptions.updateOne(
      { _id: id, account_id: accountId, updated_at: updatedAt },
      { $set: set },
    );
    if (r.matchedCount) return this.findSubscription(accountId, id);
    return (await this.findSubscription(accountId, id)) ? 'changed' : null;
  }

  async disableSubscription(id: string, reason: string): Promise<void> {
    await this.c.subscriptions.updateOne(
      { _id: id },
      { $set: { status: 'disabled', disabled_reason: reason, updated_at: new Date() } },
    );
  }

  async deleteSubscription(accountId: string, id: string): Promise<boolean> {
    const r = await this.c.subscriptions.deleteOne({ _id: id, account_id: accountId });
    await this.releasePlace(accountId, id);
    return r.deletedCount === 1;
  }

  /** One unordered insert of many deliveries; the positions the store already held. */
  insertDeliveries(docs: DeliveryDocument[]): Promise<Set<number>> {
    return insertAll(() => this.c.deliveries.insertMany(docs, { ordered: false }));
  }

  async insertDelivery(doc: DeliveryDocument): Promise<void> {
    await this.c.deliveries.insertOne(doc);
  }

  /** One unordered insert of many log entries; the positions written before (a redelivered job's). */
  appendLog(entries: DeliveryLogEntry[]): Promise<Set<number>> {
    return insertAll(() => this.c.deliveryLog.insertMany(entries.map(toStoredLogEntry), { ordered: false }));
  }

  /** Appends one entry; false when that position of the log was written already. */
  async appendLogEntry(entry: DeliveryLogEntry): Promise<boolean> {
    try {
      await this.c.deliveryLog.insertOne(toStoredLogEntry(entry));
      return true;
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
  }

  findDelivery(id: string): Promise<DeliveryDocument | null> {
    return this.c.deliveries.findOne({ _id: id });
  }

  findAccountDelivery(accountId: string, webhookId: string, id: string): Promise<DeliveryDocument | null> {
    return this.c.deliveries.findOne({ _id: id, webhook_id: webhookId, account_id: accountId });
  }

  /** Log entries of the given deliveries. */
  logOf(deliveryIds: readonly string[]): Promise<DeliveryLogEntry[]> {
    return this.entriesOf(deliveryIds, {});
  }

  /** Log entries of the given deliveries, without what their attempts sent and got (lists show neither). */
  logSummariesOf(deliveryIds: readonly string[]): Promise<DeliveryLogEntry[]> {
    return this.entriesOf(deliveryIds, WITHOUT_EXCHANGE);
  }

  private async entriesOf(
    deliveryIds: readonly string[],
    options: mongo.FindOptions,
  ): Promise<DeliveryLogEntry[]> {
    const byPrefix = this.storeIds?.idsByPrefix;
    if (!byPrefix)
      return readEach(deliveryIds, async (id) =>
        (await this.c.deliveryLog.find({ delivery_id: id }, options).toArray()).map(fromStoredLogEntry),
      );
    // An entry's id is its delivery's, the separator and its seq: the store lists them by its
    // `_id` index (no `delivery_id` index is kept there), and each is read by `_id`.
    const unique = [...new Set(deliveryIds)];
    const ids: string[] = [];
    for (let i = 0; i < unique.length; i += ID_PREFIXES_PER_CALL)
      ids.push(
        ...(await byPrefix(
          this.c.deliveryLog.collectionName,
          unique.slice(i, i + ID_PREFIXES_PER_CALL),
          LOG_ID_SEPARATOR,
        )),
      );
    return readEach(ids, async (id) =>
      (await this.c.deliveryLog.find({ _id: id }, options).toArray()).map(fromStoredLogEntry),
    );
  }

  /** Deliveries by id, without bodies; ids the store does not hold are left out. */
  deliveryHeaders(ids: readonly string[]): Promise<DeliveryHeader[]> {
    return readEach(ids, (id) => this.c.deliveries.find({ _id: id }, WITHOUT_PAYLOAD).toArray());
  }

  /** The ids of a subscription's open deliveries (failed an attempt, not succeeded since). */
  async openDeliveryIds(webhookId: string): Promise<string[]> {
    const open = await this.c.openDeliveries
      .find({ webhook_id: webhookId }, { projection: { _id: 1 } })
      .toArray();
    return open.map((o) => o._id);
  }

  /** Of these deliveries, the ones stored as pending with an empty log (never attempted). */
  async unattempted(ids: readonly string[]): Promise<Set<string>> {
    // Whether a log is empty needs no entry's request or response.
    const [docs, entries] = await Promise.all([this.deliveryHeaders(ids), this.logSummariesOf(ids)]);
    const logged = new Set(entries.map((e) => e.delivery_id));
    return new Set(docs.filter((d) => d.status === 'pending' && !logged.has(d._id)).map((d) => d._id));
  }

  /** Every log entry of a subscription's deliveries, without what its attempt sent and got (lists show neither). */
  async logOfSubscription(webhookId: string): Promise<DeliveryLogEntry[]> {
    return (
      await this.c.deliveryLog
        .find({ webhook_id: webhookId }, { ...WITHOUT_EXCHANGE, ...this.listRead })
        .toArray()
    ).map(fromStoredLogEntry);
  }

  /**
   * A page of a subscription's deliveries, newest first, and how many there are: from a number of
   * deliveries skipped, or from after or before a delivery (a keyset, which deliveries made since
   * do not shift). Before a delivery, the page is the `limit` deliveries nearest it.
   */
  async pageDeliveries(
    webhookId: string,
    event: string | undefined,
    from: DeliveryPageStart,
    limit: number,
  ): Promise<{ rows: DeliveryHeader[]; total: number }> {
    const storeIds = this.storeIds;
    if (storeIds)
      return this.pageDeliveriesByIds(
        (collection, query) => storeIds.page(collection, { ...query, ...this.listRead }),
        webhookId,
        event,
        from,
        limit,
      );
    const q: mongo.Filter<DeliveryDocument> = { webhook_id: webhookId, ...(event ? { event } : {}) };
    const total = this.c.deliveries.countDocuments(q, this.listRead);
    if ('before' in from) {
      // Read oldest first from the delivery, so the limit keeps the nearest ones.
      const { at, id } = from.before;
      const [nearest, counted] = await Promise.all([
        this.c.deliveries
          .find(
            { ...q, $or: [{ created_at: { $gt: at } }, { created_at: at, _id: { $gt: id } }] },
            { ...WITHOUT_PAYLOAD, ...this.listRead },
          )
          .sort({ created_at: 1, _id: 1 })
          .limit(limit)
          .toArray(),
        total,
      ]);
      return { rows: nearest.reverse(), total: counted };
    }
    const page = this.c.deliveries
      .find(
        'after' in from
          ? {
              ...q,
              $or: [
                { created_at: { $lt: from.after.at } },
                { created_at: from.after.at, _id: { $lt: from.after.id } },
              ],
            }
          : q,
        { ...WITHOUT_PAYLOAD, ...this.listRead },
      )
      .sort({ created_at: -1, _id: -1 });
    const [rows, counted] = await Promise.all([
      ('skip' in from ? page.skip(from.skip) : page).limit(limit).toArray(),
      total,
    ]);
    return { rows, total: counted };
  }

  /** The same page from the store's page of ids, then each delivery by id. */
  private async pageDeliveriesByIds<Counted extends { ids: string[]; total: number }>(
    pageIds: (collection: string, query: PageIdsQuery) => Promise<Counted>,
    webhookId: string,
    event: string | undefined,
    from: DeliveryPageStart,
    limit: number,
  ): Promise<Omit<Counted, 'ids'> & { rows: DeliveryHeader[] }> {
    const equal = { webhook_id: webhookId, ...(event ? { event } : {}) };
    const mark = (m: DeliveryMark) => ({ created_at: m.at, _id: m.id });
    // Before a delivery: oldest first from it, so the limit keeps the nearest ones.
    const { ids, ...counted } = await pageIds(
      this.c.deliveries.collectionName,
      'before' in from
        ? { equal, sort: { created_at: 1, _id: 1 }, after: mark(from.before), limit }
        : {
            equal,
            sort: { created_at: -1, _id: -1 },
            ...('after' in from ? { after: mark(from.after) } : { skip: from.skip }),
            limit,
          },
    );
    const byId = new Map((await this.deliveryHeaders(ids)).map((d) => [d._id, d]));
    const rows = ids.flatMap((id) => byId.get(id) ?? []);
    return { ...counted, rows: 'before' in from ? rows.reverse() : rows };
  }

  /** Every delivery of a subscription, newest first, without bodies. */
  allDeliveries(webhookId: string, event: string | undefined): Promise<DeliveryHeader[]> {
    const q: mongo.Filter<DeliveryDocument> = { webhook_id: webhookId, ...(event ? { event } : {}) };
    return this.c.deliveries
      .find(q, { ...WITHOUT_PAYLOAD, ...this.listRead })
      .sort({ created_at: -1, _id: -1 })
      .toArray();
  }

  /** One log entry by its id. */
  async findLogEntry(id: string): Promise<DeliveryLogEntry | null> {
    const stored = await this.c.deliveryLog.findOne({ _id: id });
    return stored && fromStoredLogEntry(stored);
  }

  /** One unordered insert of many attempt claims; the positions claimed before. */
  insertClaims(claims: AttemptClaim[]): Promise<Set<number>> {
    return insertAll(() => this.c.attemptClaims.insertMany(claims, { ordered: false }));
  }

  /** An attempt's claim: the job that made it, and when. */
  claimOf(attemptId: string): Promise<AttemptClaim | null> {
    return this.c.attemptClaims.findOne({ _id: attemptId });
  }

  /** One unordered insert of open-delivery entries; the positions held already. */
  insertOpen(entries: OpenDelivery[]): Promise<Set<number>> {
    return insertAll(() => this.c.openDeliveries.insertMany(entries, { ordered: false }));
  }

  /**
   * Removes every delivery whose id sorts below `bound` (its event older than the retention) and
   * what hangs off it: its open mark, log entries and attempt claims, whose ids begin with its
   * own. How many deliveries went. Once `signal` is aborted it stops after the batch in hand.
   */
  async removeBefore(bound: string, signal?: AbortSignal): Promise<number> {
    let deliveries = 0;
    for (const collection of this.c.deliveryLed) {
      if (signal?.aborted) break;
      const removed = await this.removeIdsBelow(collection, bound, signal);
      if (collection.collectionName === this.c.deliveries.collectionName) deliveries = removed;
    }
    return deliveries;
  }

  /** Removes a collection's documents whose ids are delivery-led and sort below `bound`; how many. */
  private async removeIdsBelow(
    collection: mongo.Collection<{ _id: string }>,
    bound: string,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    const range = { from: DELIVERY_ID_PREFIX, below: bound };
    const storeIds = this.storeIds;
    const batch = storeIds
      ? // FerretDB pushes no range down (a range delete reads every document of the collection)
        // and deletes by id one statement at a time: the wrapper removes a batch of it by SQL.
        () => storeIds.removeIdRange(collection.collectionName, range, this.removeBatch)
      : // MongoDB serves both from its `_id` index: the batch's last id, then the range up to it.
        async () => {
          const last = await collection
            .find({ _id: { $gte: range.from, $lt: range.below } }, { projection: { _id: 1 } })
            .sort({ _id: 1 })
            .skip(this.removeBatch - 1)
            .limit(1)
            .next();
          const upTo = last ? { $lte: last._id } : { $lt: range.below };
          return (await collection.deleteMany({ _id: { $gte: range.from, ...upTo } })).deletedCount;
        };
    // A batch at a time, with a rest between batches, so that a long backlog never holds the store
    // from every account's reads and writes (nor, on MongoDB, floods the oplog at once).
    return removeInBatches(batch, this.removeBatch, signal);
  }

  /**
   * Removes the recover-call counts of windows that ended before `now`. The collection holds about
   * one count per account that recovered lately, so reading it whole (FerretDB pushes no range
   * down) every sweep costs little.
   */
  async removeEndedRecoverWindows(now: Date): Promise<number> {
    return (await this.c.recoverCalls.deleteMany({ expires_at: { $lt: now } })).deletedCount;
  }

  async closeOpen(deliveryId: string): Promise<void> {
    await this.c.openDeliveries.deleteOne({ _id: deliveryId });
  }

  /**
   * A page of a subscription's open deliveries opened at or after `openedSince`, in id order,
   * after `after`: an equality the store serves from an index, so its cost follows the open
   * deliveries, never the history.
   */
  pageOpenDeliveries(
    webhookId: string,
    openedSince: Date,
    after: string | undefined,
    limit: number,
  ): Promise<OpenDelivery[]> {
    return this.c.openDeliveries
      .find({ webhook_id: webhookId, at: { $gte: openedSince }, ...(after ? { _id: { $gt: after } } : {}) })
      .sort({ _id: 1 })
      .limit(limit)
      .toArray();
  }

  /** Writes what a subscription's attempts since the last flush changed in its health. */
  async writeHealth(webhookId: string, batch: HealthBatch): Promise<void> {
    const { latest, counts } = healthUpdates(batch);
    await this.c.subscriptions.updateOne({ _id: webhookId, ...latest.filter }, latest.update);
    if (counts) await this.c.subscriptions.updateOne({ _id: webhookId }, counts);
  }

  /**
   * Counts one recover call of an account in the window starting at `windowStart`; the calls so
   * far, this one included.
   */
  async countRecoverCall(accountId: string, windowStart: number, windowMs: number): Promise<number> {
    const doc = await this.c.recoverCalls.findOneAndUpdate(
      { _id: `${accountId}:${windowStart}` },
      { $inc: { calls: 1 }, $setOnInsert: { expires_at: new Date(windowStart + windowMs) } },
      { upsert: true, returnDocument: 'after' },
    );
    const calls = doc?.calls ?? 1;
    // The first call of a window drops the window before it (one document per account stays).
    if (calls === 1) await this.c.recoverCalls.deleteOne({ _id: `${accountId}:${windowStart - windowMs}` });
    return calls;
  }
}
