/**
 * @signal/sdk — the typed client of the Signal Service API.
 *
 * Every public operation of /openapi.json has a method here (a test checks the operationIds);
 * lists paginate as async iterators; 429/503 are retried honouring Retry-After within a bounded
 * wait (`maxRetryWait`, each wait reported to `onRetry`);
 * every POST carries an Idempotency-Key (the same on each retry), and the POSTs the server
 * deduplicates on it (the creates, the webhook actions) are retried after a lost response or a 5xx
 * too; every attempt has a timeout;
 * errors are typed by the API's error code; `verifyWebhook` checks Standard Webhooks signatures
 * (`signWebhook` makes them, for testing a handler).
 * No runtime dependencies: Node ≥ 18 (global fetch, node:crypto).
 *
 * The modules: `types` (generated from the OpenAPI document), `errors`, `client`, `webhooks`
 * (signature verification) and `stream` (the live stream).
 */
export type { components, operations, paths } from './generated/openapi.js';
export type * from './types.js';
export {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  SignalApiError,
  SignalConnectionError,
  SignalTimeoutError,
  ValidationError,
  parseRetryAfter,
} from './errors.js';
export {
  SignalClient,
  type ListWebhooks,
  type RecoverWebhook,
  type RequestOptions,
  type SendWebhookTest,
  type SignalClientOptions,
} from './client.js';
export { WebhookVerificationError, generateWebhookSecret, signWebhook, verifyWebhook } from './webhooks.js';
export {
  SIGNAL_STREAM_PATH,
  SignalStream,
  SignalStreamError,
  SseParser,
  type PayloadOf,
  type SseEvent,
  type StreamEvent,
  type StreamOptions,
  type StreamParams,
  type StreamResetEvent,
  type StreamSignalEvent,
  type StreamTransport,
} from './stream.js';
