import type { WebhookEventName } from '@signal/contracts';
import type { HeaderLine } from './receiver-bytes';
import type {
  AttemptRecord,
  DeliveryDocument,
  DeliveryHeader,
  DeliveryLogEntry,
  DeliveryStatus,
  OpenDelivery,
  SubscriptionDocument,
} from './records';

/**
 * What the use cases need from outside, declared here and implemented in `data/`: the webhook
 * store (MongoDB), Idempotency-Key records, batched writes, the receivers' HTTP client.
 */

/** A delivery's place in the list's order. */
export interface DeliveryMark {
  at: Date;
  id: string;
}

/** Where a page of deliveries starts: past a number of them, or after or before one. */
export type DeliveryPageStart = { skip: number } | { after: DeliveryMark } | { before: DeliveryMark };

/** Subscriptions, deliveries and the delivery log as the subscriptions API's use cases use them. */
export interface WebhookStore {
  insertSubscription(doc: SubscriptionDocument): Promise<void>;
  findSubscription(accountId: string, id: string): Promise<SubscriptionDocument | null>;
  /** A page of an account's subscriptions, newest first, and how many it has. */
  pageSubscriptions(
    accountId: string,
    skip: number,
    limit: number,
  ): Promise<{ rows: SubscriptionDocument[]; total: number }>;
  /** Takes one of the account's `limit` subscription places for `id`; false when all are taken. */
  takePlace(accountId: string, id: string, limit: number): Promise<boolean>;
  releasePlace(accountId: string, id: string): Promise<void>;
  /** Gives back places taken before `before` (ms) whose subscription was never stored; how many. */
  releaseLostPlaces(accountId: string, before: number): Promise<number>;
  /** The subscription as changed, or null when the account has none by that id. */
  updateSubscription(
    accountId: string,
    id: string,
    set: Partial<SubscriptionDocument>,
  ): Promise<SubscriptionDocument | null>;
  /**
   * The update, only if the subscription is still as last updated at `updatedAt` (a
   * compare-and-set): 'changed' when another update came first, null when there is none.
   */
  updateSubscriptionIfUnchanged(
    accountId: string,
    id: string,
    updatedAt: Date,
    set: Partial<SubscriptionDocument>,
  ): Promise<SubscriptionDocument | 'changed' | null>;
  deleteSubscription(accountId: string, id: string): Promise<boolean>;
  insertDelivery(doc: DeliveryDocument): Promise<void>;
  /** Appends one entry; false when that position of the log was written already. */
  appendLogEntry(entry: DeliveryLogEntry): Promise<boolean>;
  findDelivery(id: string): Promise<DeliveryDocument | null>;
  findAccountDelivery(accountId: string, webhookId: string, id: string): Promise<DeliveryDocument | null>;
  /** Log entries of the given deliveries. */
  logOf(deliveryIds: readonly string[]): Promise<DeliveryLogEntry[]>;
  /** Log entries of the given deliveries, without their requests and responses. */
  logSummariesOf(deliveryIds: readonly string[]): Promise<DeliveryLogEntry[]>;
  /** Deliveries by id, without bodies; ids the store does not hold are left out. */
  deliveryHeaders(ids: readonly string[]): Promise<DeliveryHeader[]>;
  /** The ids of a subscription's open deliveries (failed an attempt, not succeeded since). */
  openDeliveryIds(webhookId: string): Promise<string[]>;
  /** Every log entry of a subscription's deliveries, without their requests and responses. */
  logOfSubscription(webhookId: string): Promise<DeliveryLogEntry[]>;
  /**
   * A page of a subscription's deliveries, newest first, and how many there are: from a number of
   * deliveries skipped, or from after or before a delivery (created at `at`, with id `id`); before
   * one, the `limit` nearest it.
   */
  pageDeliveries(
    webhookId: string,
    event: string | undefined,
    from: DeliveryPageStart,
    limit: number,
  ): Promise<{ rows: DeliveryHeader[]; total: number }>;
  /**
   * The same page of the deliveries whose status (their log's last entry's) is `status`, how many
   * there are, and how many deliveries the store read to tell; undefined where the store cannot
   * (MongoDB, a store wrapper of an earlier build): the caller folds the logs itself.
   */
  readonly pageDeliveriesByStatus:
    | ((
        webhookId: string,
        event: string | undefined,
        status: DeliveryStatus,
        from: DeliveryPageStart,
        limit: number,
      ) => Promise<{ rows: DeliveryHeader[]; total: number; examined: number }>)
    | undefined;
  /** Every delivery of a subscription, newest first, without bodies. */
  allDeliveries(webhookId: string, event: string | undefined): Promise<DeliveryHeader[]>;
  /**
   * A page of a subscription's open deliveries (failed an attempt, not succeeded since) opened at
   * or after `openedSince`, by id, after `after`.
   */
  pageOpenDeliveries(
    webhookId: string,
    openedSince: Date,
    after: string | undefined,
    limit: number,
  ): Promise<OpenDelivery[]>;
  /** Counts one recover call of an account in a window; the calls so far, this one included. */
  countRecoverCall(accountId: string, windowStart: number, windowMs: number): Promise<number>;
}

/** What claiming an Idempotency-Key found. */
export type Claim =
  | { outcome: 'new'; resourceId: string }
  /**
   * `claimedAt`: when the first request claimed the key; `finished`: the first request made its
   * resource (false for a record from before releases that say so, or while it is still at work);
   * `kept`: what the first request kept to answer its repeats, for an action that keeps one.
   */
  | { outcome: 'replay'; resourceId: string; claimedAt: Date; finished: boolean; kept?: string }
  | { outcome: 'conflict' };

/**
 * Idempotency-Key records, one per (scope, key): claimed before the resource is made, with the
 * resource's id chosen up front, so concurrent retries of one request make one resource.
 */
export interface IdempotencyKeys {
  claim(scope: string, key: string, requestHash: string, newResourceId: string): Promise<Claim>;
  /** The resource could not be made: let a retry try again. */
  release(scope: string, key: string): Promise<void>;
  /**
   * The first request made its resource (a replay that finds it gone knows it was deleted since),
   * or performed its action, keeping `kept` to answer its repeats.
   */
  finish(scope: string, key: string, kept?: string): Promise<void>;
}

/**
 * Writes that batch (see data/insert-batcher): resolves once the write holding these documents
 * is done, with the ids the store already had.
 */
export interface BatchedInsert<T> {
  insert(docs: readonly T[]): Promise<Set<string>>;
}

export type DeliveryWriter = BatchedInsert<DeliveryDocument>;
export type DeliveryLogWriter = BatchedInsert<DeliveryLogEntry>;

/** The store as the worker's subscription cache reads it. */
export interface SubscriptionSource {
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]>;
  findSubscriptionsByIds(ids: readonly string[]): Promise<SubscriptionDocument[]>;
}

/** Subscriptions as the worker reads them (from a short in-process cache). */
export interface SubscriptionLookup {
  subscriptionsFor(event: WebhookEventName): Promise<SubscriptionDocument[]>;
  findById(id: string): Promise<SubscriptionDocument | null>;
  /** The same, looked up first among the subscriptions of `event` (held for every attempt of it). */
  findForEvent(event: string, id: string): Promise<SubscriptionDocument | null>;
  /**
   * The subscription as stored now, when what is held is older than `version` (ms of its last
   * change): a job queued after a change must not be decided on the copy from before it.
   */
  findAtLeast(id: string, version: number): Promise<SubscriptionDocument | null>;
  /** Drops what is held (this worker changed a subscription). */
  forget(): void;
}

/** A response as read: its status, its head line by line, and the first bytes of its body. */
export interface ReceivedResponse {
  status: number;
  /** As the receiver sent them, line by line (the worker bounds and escapes them before keeping them). */
  headers: readonly HeaderLine[];
  /** The first `maxResponseBytes` of the body, as bytes. */
  body: Uint8Array;
  /** The body went on past what was read, or did not end (see `partial`). */
  truncated: boolean;
}

export type ReceiverResponse =
  | ({ ok: true; retryAfter?: string } & ReceivedResponse)
  | {
      ok: false;
      error: string;
      /**
       * What came of a response whose body did not end (still arriving at the deadline, or the
       * connection closed mid-body): the receiver's head and what arrived of the body, kept in
       * the attempt so its log shows the status the receiver sent.
       */
      partial?: ReceivedResponse;
    };

/** Port: POSTs a delivery to a receiver (data/receiver-client.ts, on node:http). */
export interface ReceiverClient {
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    limits: { timeoutMs: number; maxResponseBytes: number },
  ): Promise<ReceiverResponse>;
}

/**
 * Attempt claims: the first job to claim an attempt id makes the attempt; `again` when this very
 * job claimed it before (redelivered after a crash, or retried after a failed write), with when it
 * did (the interrupted attempt began then), `taken` when another job did.
 */
export type ClaimOutcome = { outcome: 'ours' } | { outcome: 'again'; claimedAt: Date } | { outcome: 'taken' };

export interface AttemptClaims {
  claim(attemptId: string, jobId: string): Promise<ClaimOutcome>;
}

/** The index of deliveries that failed an attempt and have not succeeded since. */
export interface OpenDeliveries {
  mark(delivery: OpenDelivery): Promise<void>;
  close(deliveryId: string): Promise<void>;
}

/** Keeps each subscription's health as its attempts are recorded (written in the background). */
export interface HealthRecorder {
  note(webhookId: string, attempt: AttemptRecord): void;
}

/**
 * What an account's delivery lists owe of the store's time (`ms` as of wall-clock time `at`), and
 * when it is paid back at the rate of its writing (`clearAt`): kept in the store every webhooks
 * API process reads, so N processes pace an account as one does.
 */
export interface ReadDebt {
  ms: number;
  at: number;
  clearAt: number;
}

export interface ReadDebts {
  /** The account's debt as last written, if any. */
  get(accountId: string): Promise<ReadDebt | undefined>;
  /**
   * Writes `next` if the account's debt is still `was` (none: undefined); false when another
   * process wrote in between, so the caller reads it again and adds to what is there.
   */
  swap(accountId: string, was: ReadDebt | undefined, next: ReadDebt): Promise<boolean>;
  /** How many accounts owe at `now` (their `clearAt` later). */
  owing(now: number): Promise<number>;
}
