/**
 * Types of the public resources: generated (scripts/generate-types.mjs) from the OpenAPI document
 * that @signal/contracts builds from its route table, the document the API serves; a test fails
 * when the generated file is not the one the contracts make.
 */
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];
type QueryOf<K extends keyof operations> = NonNullable<operations[K]['parameters']['query']>;

export type SignalListItem = Schemas['SignalListItem'];
export type SignalDetail = Schemas['SignalDetail'];
export type SignalType = SignalListItem['type'];
export type SignalStatus = SignalListItem['performance']['status'];
export type ListMeta = Schemas['ListMeta'];
/** A delivery list's `meta`: `prev_cursor` too, to walk back as the walk came. */
export type DeliveryListMeta = Schemas['DeliveryListMeta'];
export type PageMeta = Schemas['PageMeta'];
export type Statistics = Schemas['Statistics'];
export type StatsPeriod = NonNullable<QueryOf<'getStats'>['period']>;
export type WebhookSubscription = Schemas['WebhookSubscription'];
export type WebhookSubscriptionWithSecret = Schemas['WebhookSubscriptionWithSecret'];
export type WebhookEvent = WebhookSubscription['events'][number];
export type Delivery = Schemas['WebhookDelivery'];
export type DeliveryDetail = Schemas['WebhookDeliveryDetail'];
export type DeliveryAttempt = DeliveryDetail['attempts'][number];
/** What an attempt sent: URL, every header, the exact body. */
export type DeliveryAttemptRequest = Schemas['WebhookAttemptRequest'];
/** What came back: status, headers, the start of the body. */
export type DeliveryAttemptResponse = Schemas['WebhookAttemptResponse'];
/** The event of a test delivery: webhook.test, or a sample of any event in its payload shape. */
export type WebhookTestEvent = NonNullable<Schemas['WebhookTestRequest']['event']>;
export type WebhookTestInput = Schemas['WebhookTestRequest'];
export type RecoverWebhookResult = Schemas['RecoverWebhookResult'];
/** One page of `webhooks.recover`: after `cursor` (a result's `next_cursor`), at most `limit`. */
export type RecoverWebhookPage = Omit<Schemas['RecoverWebhookRequest'], 'since'>;
export type DeliveryStatus = Delivery['status'];
export type ApiKey = Schemas['ApiKey'];
export type ApiKeyWithSecret = Schemas['ApiKeyWithSecret'];
/** A roll: `created` (its `key` shown only here) and `previous`, the key it replaced. */
export type RolledApiKey = Schemas['RolledApiKey'];
export type Session = Schemas['Session'];
export type ErrorCode = Schemas['ErrorEnvelope']['error']['code'];
/** What a webhook request carries, one shape per `event` (narrow on it). */
export type WebhookPayload = Schemas['WebhookPayload'];

export interface Page<T, M = ListMeta | PageMeta> {
  data: T[];
  meta: M;
}

/** `since` may also be a Date (sent as its ISO form). */
export type ListSignalsParams = Omit<QueryOf<'listSignals'>, 'since'> & { since?: string | Date };
export type StatsParams = QueryOf<'getStats'>;
export type CreateWebhookInput = Schemas['CreateWebhookRequest'];
export type UpdateWebhookInput = Schemas['UpdateWebhookRequest'];
export type ListWebhooksParams = QueryOf<'listWebhooks'>;
export type ListDeliveriesParams = QueryOf<'listWebhookDeliveries'>;
export type ListApiKeysParams = QueryOf<'listApiKeys'>;
export type CreateApiKeyInput = Schemas['CreateApiKeyRequest'];
export type RollApiKeyInput = Schemas['RollApiKeyRequest'];
export type RenameApiKeyInput = Schemas['RenameApiKeyRequest'];
export type ChangePasswordInput = Schemas['ChangePasswordRequest'];

/**
 * The `X-RateLimit-*` headers of the latest response that carried them: the account's window
 * (minute or day) with fewer requests left. Pace a client by it before it meets a `429`.
 */
export interface RateLimit {
  /** Requests the window allows. */
  limit: number;
  /** Requests left in it. */
  remaining: number;
  /** Unix time (seconds) when the window resets. */
  reset: number;
}

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  method: string;
  path: string;
  /** The retry about to be made: 1 for the first. */
  attempt: number;
  /** How long the client waits before it, in ms. */
  delayMs: number;
  /** The HTTP status that caused it (429, 503, a 5xx of a deduplicated POST), if any. */
  status?: number;
  /** The error the attempt ended with. */
  error: Error;
}
