import type { Connection, mongo } from 'mongoose';
import type { AttemptClaim, DeliveryDocument, OpenDelivery, SubscriptionDocument } from '../domain/records';
import type { StoredLogEntry } from './stored-log-entry';

export interface IdempotencyDocument {
  _id: string;
  request_hash: string;
  resource_id: string;
  expires_at: Date;
  /** When the first request had made its resource (absent while it works, or from older releases). */
  finished_at?: Date;
  /** What an action's first request kept to answer its repeats (rotate-secret, test, retry, recover). */
  kept?: string;
}

/** The service's collections, typed, through the driver mongoose connects with. */
export interface WebhookCollections {
  subscriptions: mongo.Collection<SubscriptionDocument>;
  deliveries: mongo.Collection<DeliveryDocument>;
  deliveryLog: mongo.Collection<StoredLogEntry>;
  idempotency: mongo.Collection<IdempotencyDocument>;
  attemptClaims: mongo.Collection<AttemptClaim>;
  openDeliveries: mongo.Collection<OpenDelivery>;
  recoverCalls: mongo.Collection<RecoverCallsDocument>;
  subscriptionPlaces: mongo.Collection<SubscriptionPlacesDocument>;
  listReadDebts: mongo.Collection<ListReadDebtDocument>;
  /**
   * The collections whose ids begin with a delivery's id, as retention sees them (ids only), in
   * the order it removes from them.
   */
  deliveryLed: Array<mongo.Collection<{ _id: string }>>;
}

/**
 * What an account's delivery lists owe of the store's time (`_id` = the account): one document
 * per account that read a long history lately, shared by every API replica.
 */
export interface ListReadDebtDocument {
  _id: string;
  ms: number;
  at: number;
  clear_at: number;
}

/**
 * An account's places for subscriptions (`_id` = the account): the ids holding one, and their
 * number for the conditional update that takes a place. One document per account, so taking a
 * place is one atomic update, whatever the number of API replicas.
 */
export interface SubscriptionPlacesDocument {
  _id: string;
  ids: string[];
  used: number;
}

/** Recover calls of an account in one window (`_id` = `<account>:<window start ms>`). */
export interface RecoverCallsDocument {
  _id: string;
  calls: number;
  expires_at: Date;
}

export function webhookCollections(connection: Connection): WebhookCollections {
  const db = connection.db;
  if (!db) throw new Error('MongoDB connection is not open');
  return {
    subscriptions: db.collection<SubscriptionDocument>('subscriptions'),
    deliveries: db.collection<DeliveryDocument>('deliveries'),
    deliveryLog: db.collection<StoredLogEntry>('delivery_log'),
    idempotency: db.collection<IdempotencyDocument>('idempotency_keys'),
    attemptClaims: db.collection<AttemptClaim>('attempt_claims'),
    openDeliveries: db.collection<OpenDelivery>('open_deliveries'),
    recoverCalls: db.collection<RecoverCallsDocument>('recover_calls'),
    subscriptionPlaces: db.collection<SubscriptionPlacesDocument>('subscription_places'),
    listReadDebts: db.collection<ListReadDebtDocument>('list_read_debts'),
    // An open mark first and attempt claims last: while a sweep runs, nothing points at a delivery
    // already gone but entries no read reaches without their delivery.
    deliveryLed: ['open_deliveries', 'deliveries', 'delivery_log', 'attempt_claims'].map((name) =>
      db.collection<{ _id: string }>(name),
    ),
  };
}

/** What the store does by itself, so that the service needs no index for it. */
export interface StoreReads {
  /**
   * The store pages a subscription's deliveries by itself, by status too (the embedded FerretDB's
   * wrapper: service-kit's `storeIdCommands` with `pageByLatest`).
   */
  pagedByStore: boolean;
  /**
   * The store finds a delivery's log entries by their `_id`s, which begin with the delivery's
   * (`storeIdCommands` with `idsByPrefix`).
   */
  logByIdPrefix: boolean;
}

/**
 * Every index the service reads by, declared once and created at start-up (idempotent).
 *
 * `pagedByStore`: the store pages a subscription's deliveries by itself, by status too (the
 * embedded FerretDB's wrapper: service-kit's `storeIdCommands` with `pageByLatest`). Then no read
 * finds deliveries or log entries by `webhook_id` through the driver — the wrapper's SQL pages by
 * the compound index and finds each delivery's last entry by the log's `_id` or `delivery_id`
 * index — so the two single-field `webhook_id` indexes are not created (with their GIN twins,
 * four of the fourteen index entries an attempt's documents otherwise write). On any other store (MongoDB) lists read
 * by them. Nor is a unique (webhook_id, event_id) index: every writer derives a delivery's `_id` from
 * the pair (`deliveryIdFor`) or from a fresh event id (a test event), so `_id` keeps the pair unique.
 * `logByIdPrefix`: no read finds log entries by `delivery_id` (a delivery's entries and each
 * listed delivery's last one are a range of the `_id` index), so neither is that index created:
 * two index entries fewer per attempt, which on a 3.3 µs machine is the difference between a
 * pipeline that keeps up at 2,000 attempts a second and one that falls behind
 * (docs/benchmarks.md, "Which piece of our data model costs the target").
 * Indexes an earlier release created stay until an operator drops them (docs/operations.md).
 */
export async function ensureIndexes(c: WebhookCollections, store: StoreReads): Promise<void> {
  // An account's subscriptions, newest first (list, and ownership checks by id + account).
  await c.subscriptions.createIndex({ account_id: 1, created_at: -1 });
  // Fan-out: subscriptions that want an event.
  await c.subscriptions.createIndex({ events: 1, status: 1 });
  // Deliveries of a subscription, newest first: a page of them on MongoDB, and on the embedded
  // FerretDB the btree its wrapper pages ids from by SQL (infra/ferretdb/pages.go).
  await c.deliveries.createIndex({ webhook_id: 1, created_at: -1 });
  // The state of one delivery, or of a page of them (one equality read per delivery; the
  // wrapper's last entry of each). Single field: the wrapper gives single-field indexes the GIN
  // twin FerretDB's equality pushdown uses, and a compound index none
  // (docs/decisions/embedded-mongodb-wire-default.md). A delivery has a handful of entries,
  // ordered by seq in memory.
  if (!store.logByIdPrefix) await c.deliveryLog.createIndex({ delivery_id: 1 });
  if (!store.pagedByStore) {
    // A subscription's deliveries and log entries by equality: single field for the same reason,
    // or each read by subscription would scan every account's deliveries.
    await c.deliveries.createIndex({ webhook_id: 1 });
    await c.deliveryLog.createIndex({ webhook_id: 1 });
  }
  // Recover: a subscription's open deliveries (failed or pending after a failure), single field
  // for the same reason; the page is cut by `_id` from there.
  await c.openDeliveries.createIndex({ webhook_id: 1 });
  // How many accounts owe list-reading time now (the rate they share), and the old ones' removal.
  await c.listReadDebts.createIndex({ clear_at: 1 });
}
