import type { WebhookEventName } from '@signal/contracts';
import type { DeliveryDocument, DeliveryLogEntry, SubscriptionDocument } from '../data/webhook.models';

/**
 * Writes that batch (see data/insert-batcher): resolves once the write holding these documents
 * is done, with the ids the store already had.
 */
export interface BatchedInsert<T> {
  insert(docs: readonly T[]): Promise<Set<string>>;
}

export type DeliveryWriter = BatchedInsert<DeliveryDocument>;
export type DeliveryLogWriter = BatchedInsert<DeliveryLogEntry>;

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

export type ReceiverResponse =
  | {
      ok: true;
      status: number;
      /** Bounded: at most 50 headers, each cut at 1,024 characters. */
      headers: Record<string, string>;
      /** The first `maxResponseBytes` of the body, as UTF-8. */
      body: string;
      truncated: boolean;
      retryAfter?: string;
    }
  | { ok: false; error: string };

/** Port: POSTs a delivery to a receiver (data/receiver-client.ts, on undici). */
export interface ReceiverClient {
  post(
    url: string,
    headers: Record<string, string>,
    body: string,
    limits: { timeoutMs: number; maxResponseBytes: number },
  ): Promise<ReceiverResponse>;
}
