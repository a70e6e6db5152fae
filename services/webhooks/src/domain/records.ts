import type { SignalType, WebhookEventName } from '@signal/contracts';

/**
 * What the webhooks service keeps, as the use cases read and write it; `data/` stores these
 * shapes as they are (one document each).
 */

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface SigningSecret {
  secret: string;
  created_at: Date;
  /** null = current; a date = rotated out, still signing until then. */
  expires_at: Date | null;
}

export interface SubscriptionDocument {
  _id: string;
  account_id: string;
  url: string;
  events: WebhookEventName[];
  types: SignalType[] | null;
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  secrets: SigningSecret[];
  created_at: Date;
  updated_at: Date;
  /** Written by the worker as attempts are recorded; absent before the first. */
  health?: SubscriptionHealthRecord;
}

/**
 * A subscription's delivery health, kept by the worker (one update per subscription per flush,
 * never a scan): the latest attempt, since when it has been failing, failures per hour.
 */
export interface SubscriptionHealthRecord {
  last_attempt_at?: Date;
  last_succeeded?: boolean;
  last_status_code?: number | null;
  last_error?: string | null;
  /** The first failed attempt since the last success; absent while the latest succeeded. */
  failing_since?: Date;
  /** Failed attempts per hour: key `h<hours since the epoch>`. */
  failures?: Record<string, number>;
}

/** The request an attempt sent, as shown to its account: the body is the delivery's payload. */
export interface AttemptRequest {
  url: string;
  /** Every header sent; the signature is a MAC of this one body, the signing secret is never here. */
  headers: Record<string, string>;
}

/** One response header as kept. */
export interface StoredHeader {
  name: string;
  value: string;
}

/**
 * The receiver's response to an attempt, as much of it as the worker reads, in a form every
 * store accepts (domain/receiver-bytes.ts).
 */
export interface AttemptResponse {
  status: number;
  /** Escaped, in order; an object in attempts recorded before (read, never written). */
  headers: StoredHeader[] | Record<string, string>;
  /** Headers were left out or cut (absent in attempts recorded before it was kept: none were said to be). */
  headers_truncated?: boolean;
  /** The first WEBHOOK_MAX_RESPONSE_BYTES (4 KB) of the body: as text, or base64 of the bytes. */
  body: string;
  /** Absent in attempts recorded before it was kept: text. */
  body_encoding?: 'text' | 'base64';
  /** The body went on past what was read, or did not end (the attempt failed with a timeout or a reset). */
  body_truncated: boolean;
}

export interface AttemptRecord {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  /** Absent in attempts recorded before requests were kept. */
  request?: AttemptRequest | null;
  /** null when no response came (no answer by the timeout, refused, …); absent in older attempts. */
  response?: AttemptResponse | null;
}

/**
 * One delivery of one event to one subscription, written once (at fan-out, in one insert with
 * its siblings). What happens to it afterwards is appended to the delivery log, never written
 * back here: on the MongoDB-wire store an insert is cheap and batches, an update is not.
 */
export interface DeliveryDocument {
  _id: string;
  account_id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  /** The exact body sent on every attempt (signatures cover it byte for byte). */
  payload: string;
  /** At creation: pending, or failed when the subscription was disabled. */
  status: DeliveryStatus;
  created_at: Date;
  /** Written by versions before the delivery log (state kept in the document); read, never written. */
  attempts_made?: number;
  attempts?: AttemptRecord[];
  next_attempt_at?: Date | null;
  updated_at?: Date;
}

/** A delivery without its body (lists never send it). */
export type DeliveryHeader = Omit<DeliveryDocument, 'payload'>;

/**
 * A change of a delivery's state, appended once: `_id` = `<delivery id>:<seq>`, so a job
 * redelivered after a crash can never record the same attempt twice (the insert is refused).
 * seq = 2k for attempt k (made, or dropped because the subscription is off), 2k − 1 for the
 * re-send that queued attempt k: the entry with the highest seq is the delivery's state.
 */
export interface DeliveryLogEntry {
  _id: string;
  delivery_id: string;
  webhook_id: string;
  seq: number;
  kind: 'attempt' | 'dropped' | 'requeued';
  attempt: number;
  /** The delivery's status after this entry. */
  status: DeliveryStatus;
  next_attempt_at: Date | null;
  at: Date;
  /** The attempt itself (kind 'attempt' only). */
  started_at: Date | null;
  duration_ms: number | null;
  status_code: number | null;
  error: string | null;
  /** The trace the attempt ran in (absent when tracing is off, and in older entries). */
  trace_id?: string | null;
  /** What the attempt sent and what came back (kind 'attempt'; absent in older entries). */
  request?: AttemptRequest | null;
  response?: AttemptResponse | null;
}

/**
 * A delivery that failed an attempt and has not succeeded since: the index recover pages
 * through (one document per delivery, removed when it succeeds), so that its cost follows the
 * deliveries it may act on, never the subscription's history.
 */
export interface OpenDelivery {
  _id: string;
  webhook_id: string;
  account_id: string;
  /** When an attempt first left it failed or pending (an entry is written once, never updated). */
  at: Date;
}

/** Who claimed an attempt: `_id` is the attempt's log entry id. */
export interface AttemptClaim {
  _id: string;
  job_id: string;
  at: Date;
}
